// Public surface of the runner for TypeScript users (the in-process SDK and the process runner's parts).
export { AgentTokenError, createAgentTokenMinter } from './agent-tokens.js';
export { attemptBaseUrl, attemptRewardUrl, normalizeGatewayUrl } from './attempt-urls.js';
export { createFunctionExecutor } from './function-executor.js';
export {
  attemptEnv,
  createProcessExecutor,
  type ProcessExecutor,
  type ProcessExecutorOptions,
} from './process-executor.js';
export { createProgressReporter, type ProgressReporter } from './progress.js';
export { postReward, RewardPostError } from './reward-client.js';
export { type RunAgentOptions, runAgent } from './run-agent.js';
export {
  type AgentKeyProvider,
  createRunner,
  PLACEHOLDER_API_KEY,
  type Runner,
  type RunnerOptions,
} from './runner.js';
export type {
  AbortReason,
  AgentFunction,
  AttemptContext,
  AttemptExecutor,
  AttemptFinishedEvent,
  AttemptOutcome,
  AttemptStartedEvent,
  FinalAttemptStatus,
  RunnerObserver,
  RunnerStats,
} from './types.js';
