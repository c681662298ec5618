// Typed Hono context shared by every middleware and route (style.md §1.1).
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
  };
};

export type RolloutEnv = {
  Variables: AppEnv['Variables'] & { attribution: Attribution | null };
};
