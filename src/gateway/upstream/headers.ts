// Header names, lower-case, defined once.
export const HEADER_REQUEST_ID = 'x-request-id' as const;
export const HEADER_ROLLOUT_ID = 'x-rollout-id' as const;
export const HEADER_ATTEMPT_ID = 'x-attempt-id' as const;
export const HEADER_SEQUENCE_ID = 'x-sequence-id' as const;
export const HEADER_SHOULD_RETRY = 'x-should-retry' as const;
export const HEADER_RETRY_AFTER = 'retry-after' as const;
export const HEADER_RETRY_AFTER_MS = 'retry-after-ms' as const;
export const HEADER_STAINLESS_RETRY_COUNT = 'x-stainless-retry-count' as const;
export const HEADER_AGL_PAUSED = 'x-agl-paused' as const;
export const HEADER_API_KEY = 'x-api-key' as const;
export const HEADER_AUTHORIZATION = 'authorization' as const;
export const HEADER_IDEMPOTENCY_KEY = 'idempotency-key' as const;
export const HEADER_ROLLGATE_CACHE = 'x-rollgate-cache' as const;
/** Sent by every Anthropic SDK call: the Messages API's errors and models list answer in Anthropic's shape. */
export const HEADER_ANTHROPIC_VERSION = 'anthropic-version' as const;
/** Anthropic's request id header (the Anthropic SDK's `requestID`). */
export const HEADER_ANTHROPIC_REQUEST_ID = 'request-id' as const;
/**
 * Claude Code's own label of a call (`main`, `subagent`, `workflow`, `compaction`, `auxiliary`, `side_reply`), sent
 * to a gateway when it runs with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1.
 */
export const HEADER_CLAUDE_CODE_REQUEST_CLASS = 'x-claude-code-request-class' as const;
/** Any agent's own label of a call, `main` or `auxiliary` (call-role.ts); it overrides every other rule. */
export const HEADER_ROLLGATE_CALL_ROLE = 'x-rollgate-call-role' as const;
