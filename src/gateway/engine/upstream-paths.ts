// The engine path each endpoint is forwarded to (a faithful-history call goes to FAITHFUL_UPSTREAM_PATH instead).
import type { Endpoint } from '../../contracts/call-record.js';

export const UPSTREAM_PATHS: Record<Endpoint, string> = {
  chat: '/chat/completions',
  completions: '/completions',
  responses: '/responses',
};
