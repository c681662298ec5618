// Typed Hono context shared by every middleware and route.
import type { Principal } from '../src/auth/keys.js';
import type { Logger } from '../src/logger.js';

export interface Attribution {
  readonly rid: string;
  readonly aid: string;
  readonly seq: number;
  readonly requestId: string;
}

export type AppEnv = {
  Variables: {
    requestId: string;
    logger: Logger;
    /** Who is calling; set by the auth middleware (admin for everyone when no keys are configured). */
    principal: Principal;
  };
};

export type RolloutEnv = {
  Variables: AppEnv['Variables'] & { attribution: Attribution | null };
};
