// The only file where span attribute names appear: the names every reader of a span relies on (the store's
// token-id columns, tracing, the adapters, the dashboard), so it sits below all of them and imports nothing.
// GenAI semconv names are copied here on purpose: the JS incubating entry point is unstable.

// --- agent-lightning attribution (names kept verbatim so its readers work) ---
export const ATTR_ROLLOUT_ID = 'agentlightning.rollout_id' as const;
export const ATTR_ATTEMPT_ID = 'agentlightning.attempt_id' as const;
export const ATTR_SPAN_SEQUENCE_ID = 'agentlightning.span_sequence_id' as const;

// --- canonical token-level record (docs/architecture.md) ---
export const ATTR_PROMPT_TOKEN_IDS = 'prompt_token_ids' as const;
export const ATTR_RESPONSE_TOKEN_IDS = 'response_token_ids' as const;
export const ATTR_LOGPROBS_CONTENT = 'logprobs.content' as const;
export const ATTR_RESPONSE_LOGPROBS = 'rollgate.response.logprobs' as const;
/** `rollgate.choices.<i>.token_ids` / `.logprobs`, only for n > 1 and i >= 1. */
export const choiceTokenIdsAttr = (index: number): string => `rollgate.choices.${index}.token_ids`;
export const choiceLogprobsAttr = (index: number): string => `rollgate.choices.${index}.logprobs`;
export const ATTR_TOKEN_IDS_STATUS = 'rollgate.token_ids.status' as const;
export const TOKEN_IDS_STATUS_VALUE_OK = 'ok' as const;
export const TOKEN_IDS_STATUS_VALUE_MISSING = 'missing' as const;
export const TOKEN_IDS_STATUS_VALUE_PARTIAL = 'partial' as const;
export type TokenIdsStatus =
  | typeof TOKEN_IDS_STATUS_VALUE_OK
  | typeof TOKEN_IDS_STATUS_VALUE_MISSING
  | typeof TOKEN_IDS_STATUS_VALUE_PARTIAL;
/** Why the ids are not `ok`; present only when the status is `partial` or `missing`. */
export const ATTR_TOKEN_IDS_REASON = 'rollgate.token_ids.reason' as const;
/** Neither prompt nor response ids came back (old vLLM, `return_token_ids` ignored, a parser that nulls them). */
export const TOKEN_IDS_REASON_VALUE_NOT_RETURNED = 'not_returned' as const;
/** The call did not finish (stream error, client disconnect): whatever ids arrived are a prefix. */
export const TOKEN_IDS_REASON_VALUE_INCOMPLETE = 'incomplete' as const;
/** Some choice has response ids but no prompt ids of its own or of the call. */
export const TOKEN_IDS_REASON_VALUE_NO_PROMPT_IDS = 'no_prompt_ids' as const;
/** Some choice has no response ids (prompt ids only, GPT-OSS style). */
export const TOKEN_IDS_REASON_VALUE_NO_RESPONSE_IDS = 'no_response_ids' as const;
/** A stream chunk carried text or tool-call deltas but no ids. */
export const TOKEN_IDS_REASON_VALUE_TEXT_WITHOUT_IDS = 'text_without_ids' as const;
/** The response ids do not add up to the engine's `usage.completion_tokens` (ids lost with no text gap). */
export const TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH = 'count_mismatch' as const;
/**
 * Not asked for: the engine gives no ids on this kind of stream (SGLang chat streams refuse `return_token_ids`;
 * vLLM's Responses streams are not asked for their raw messages, docs/real-engines.md).
 */
export const TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED = 'stream_unsupported' as const;
/** Not asked for: a background Responses call answers before anything is generated. */
export const TOKEN_IDS_REASON_VALUE_BACKGROUND = 'background' as const;
/** Why rollgate did not ask the engine for ids (the status is then `missing` unless the agent asked itself). */
export type TokenIdsUnavailableReason =
  | typeof TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED
  | typeof TOKEN_IDS_REASON_VALUE_BACKGROUND;
export type TokenIdsReason =
  | TokenIdsUnavailableReason
  | typeof TOKEN_IDS_REASON_VALUE_NOT_RETURNED
  | typeof TOKEN_IDS_REASON_VALUE_INCOMPLETE
  | typeof TOKEN_IDS_REASON_VALUE_NO_PROMPT_IDS
  | typeof TOKEN_IDS_REASON_VALUE_NO_RESPONSE_IDS
  | typeof TOKEN_IDS_REASON_VALUE_TEXT_WITHOUT_IDS
  | typeof TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH;
/** `rollgate.choices.<i>.prompt_token_ids`: choice i's own prompt, only where it differs from `prompt_token_ids`. */
export const choicePromptTokenIdsAttr = (index: number): string => `rollgate.choices.${index}.prompt_token_ids`;
/** Why the chosen-token logprobs were left out although the engine sent some; absent when they were kept. */
/**
 * MoE routing replay: the first choice's routed experts, the bytes of a row-major array of shape
 * `rollgate.routed_experts.shape` = [prompt + response - 1, layers, top_k] in `rollgate.routed_experts.dtype`
 * (little-endian), as base64; row i is token i of the prompt ids followed by the response ids
 * (docs/training-data.md#routed-experts).
 */
export const ATTR_ROUTED_EXPERTS = 'rollgate.routed_experts' as const;
export const ATTR_ROUTED_EXPERTS_SHAPE = 'rollgate.routed_experts.shape' as const;
export const ATTR_ROUTED_EXPERTS_DTYPE = 'rollgate.routed_experts.dtype' as const;
/**
 * On every answered call of a pool that captures routes: `ok`, or why none were kept (`missing`: the answer had none,
 * e.g. a vLLM stream or a server started without the flag; `malformed`; `not_covering`).
 */
export const ATTR_ROUTED_EXPERTS_STATUS = 'rollgate.routed_experts.status' as const;
export const ROUTED_EXPERTS_STATUS_VALUE_OK = 'ok' as const;
export const ROUTED_EXPERTS_STATUS_VALUE_MISSING = 'missing' as const;
export const ROUTED_EXPERTS_STATUS_VALUE_MALFORMED = 'malformed' as const;
export const ROUTED_EXPERTS_STATUS_VALUE_NOT_COVERING = 'not_covering' as const;
export const ATTR_LOGPROBS_DROPPED = 'rollgate.logprobs.dropped' as const;
/** A value at or below vLLM's -9999.0 placeholder (clamped -inf, or no entry for the sampled token). */
export const LOGPROBS_DROPPED_VALUE_FLOOR = 'floor' as const;
/** Not one value per response token. */
export const LOGPROBS_DROPPED_VALUE_MISALIGNED = 'misaligned' as const;
/** A null, NaN, infinite or non-numeric value. */
export const LOGPROBS_DROPPED_VALUE_NON_FINITE = 'non_finite' as const;
export type LogprobsDropReason =
  | typeof LOGPROBS_DROPPED_VALUE_FLOOR
  | typeof LOGPROBS_DROPPED_VALUE_MISALIGNED
  | typeof LOGPROBS_DROPPED_VALUE_NON_FINITE;
/** Logprobs at or below this are placeholders, never real values. */
export const LOGPROB_FLOOR = -9999;
/** How the engine ended the generation, when it did not end it itself; absent for a normal finish. */
export const ATTR_CALL_OUTCOME = 'rollgate.call.outcome' as const;
/** The engine aborted the request (pause, sleep, abort_requests, cancel) and sent what it had as a normal answer. */
export const CALL_OUTCOME_VALUE_ABORTED = 'aborted' as const;
/** The finish reason vLLM and SGLang give an aborted request (SGLang may send it as `{type: "abort"}`). */
export const FINISH_REASON_VALUE_ABORT = 'abort' as const;

// --- rollgate call metadata ---
export const ATTR_REQUEST_ID = 'rollgate.request_id' as const;
/** The API the agent spoke when it is not the one the engine served (the call is recorded as the engine's chat call). */
export const ATTR_API = 'rollgate.api' as const;
export const API_VALUE_ANTHROPIC_MESSAGES = 'anthropic.messages' as const;
/** A Responses API call the gateway served as a chat call (a pool with `responses: "via-chat"`). */
export const API_VALUE_OPENAI_RESPONSES = 'openai.responses' as const;
/**
 * Whether the call is the harness's agent loop (`main`) or its housekeeping (`auxiliary`: session titles,
 * summaries, compaction, quota and key probes); auxiliary calls are kept out of training rows (call-role.ts).
 */
export const ATTR_CALL_ROLE = 'rollgate.call.role' as const;
export const CALL_ROLE_VALUE_MAIN = 'main' as const;
export const CALL_ROLE_VALUE_AUXILIARY = 'auxiliary' as const;
/**
 * What told the role: `header` (the agent's x-rollgate-call-role or the harness's own label), `config` (the pool's
 * `callRoles` rules), `probe` (a one-token quota or key check), `prompt` (a known housekeeping prompt, or a subagent
 * prompt that keeps a call main), `thread` (another system prompt and tool set than the rollout attempt's main thread)
 * or `default` (nothing marked it auxiliary).
 */
export const ATTR_CALL_ROLE_SOURCE = 'rollgate.call.role_source' as const;
export const ATTR_CLIENT_RETRY_COUNT = 'rollgate.client_retry_count' as const;
export const ATTR_MODE = 'rollgate.mode' as const;
/**
 * On a call the gateway sent in place of one an abort-resubmit weight swap aborted (docs/weight-swaps.md): the
 * aborted try's sequence id. The aborted try is then no turn the rollout built upon, and training leaves it out
 * without dropping the rollout.
 */
export const ATTR_RESUBMIT_OF = 'rollgate.resubmit_of' as const;
export const ATTR_MODEL_VERSION = 'rollgate.model_version' as const;
/**
 * True when the pool moved to a newer version on the same backend server while the call was in flight: the
 * call keeps the version it was sent under, but its weights may have changed mid-generation (no pause/drain).
 */
export const ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT = 'rollgate.model_version.changed_in_flight' as const;
/**
 * Which version computed which tokens of a call the pool's version changed under while it streamed (a keep-mode
 * swap): JSON `[[start, end, version], ...]` over choice 0's response token ids, `end` exclusive, in order and
 * covering every id. Set instead of `changed_in_flight` when the gateway could tell where the change fell.
 */
export const ATTR_MODEL_VERSION_SEGMENTS = 'rollgate.model_version.segments' as const;
/** How the pool keeps KV of older weights out of this call: `salt`, `reset` or `off` (vLLM backends only). */
export const ATTR_PREFIX_CACHE_STRATEGY = 'rollgate.prefix_cache.strategy' as const;
/** What the backend's logprobs mean, as the pool declares it (vLLM backends only). */
export const ATTR_LOGPROBS_MODE = 'rollgate.logprobs.mode' as const;
export const LOGPROBS_MODE_VALUE_RAW = 'raw' as const;
export const LOGPROBS_MODE_VALUE_PROCESSED = 'processed' as const;
/**
 * Request parameters (e.g. `temperature`, `top_p`) under which this call's raw logprobs are not the sampling
 * distribution's; present only then. Such logprobs are no behaviour-policy logprobs (importance ratios).
 */
export const ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS = 'rollgate.logprobs.raw_adjusted_params' as const;
export const ATTR_UPSTREAM_URL = 'rollgate.upstream.url' as const;
export const ATTR_UPSTREAM_STATUS_CODE = 'rollgate.upstream.status_code' as const;
export const ATTR_UPSTREAM_RETRY_COUNT = 'rollgate.upstream.retry_count' as const;
export const ATTR_UPSTREAM_TRY = 'rollgate.upstream.try' as const;
export const ATTR_BACKEND = 'rollgate.backend' as const;
/** How the pool placed a rollout's call (docs/routing.md): sticky | moved | new; absent without a rollout. */
export const ATTR_ROUTING_DECISION = 'rollgate.routing.decision' as const;
export const ATTR_REQUEST_OVERRIDES = 'rollgate.request.overrides' as const;
/**
 * Why the agent's max tokens were lowered (`rollgate.request.overrides` holds its own value): `at_most` (the pool's
 * `clampMaxTokens.atMost`) or `context` (the context left after the prompt). Absent when nothing was lowered.
 */
export const ATTR_REQUEST_MAX_TOKENS_CLAMP = 'rollgate.request.max_tokens_clamp' as const;
export const MAX_TOKENS_CLAMP_VALUE_AT_MOST = 'at_most' as const;
export const MAX_TOKENS_CLAMP_VALUE_CONTEXT = 'context' as const;
export type MaxTokensClampReason = typeof MAX_TOKENS_CLAMP_VALUE_AT_MOST | typeof MAX_TOKENS_CLAMP_VALUE_CONTEXT;
/**
 * The context length (`max_model_len`) the pool's engine reports in its `GET /v1/models`, when the gateway knows it.
 * Training rows take their length limits from it when the trainer declares none (docs/trajectories.md).
 */
export const ATTR_ENGINE_MAX_MODEL_LEN = 'rollgate.engine.max_model_len' as const;
export const ATTR_USAGE_DERIVED = 'rollgate.usage.derived' as const;
export const ATTR_CACHE_STATUS = 'rollgate.cache.status' as const;
export const CACHE_STATUS_VALUE_HIT = 'hit' as const;
export const CACHE_STATUS_VALUE_MISS = 'miss' as const;
export const ATTR_STREAM_STATUS = 'rollgate.stream.status' as const;
export const STREAM_STATUS_VALUE_OK = 'ok' as const;
export const STREAM_STATUS_VALUE_ERROR = 'error' as const;
export const STREAM_STATUS_VALUE_CLIENT_DISCONNECTED = 'client_disconnected' as const;
export const STREAM_STATUS_VALUE_STREAM_ERROR = 'stream_error' as const;
export type StreamStatus =
  | typeof STREAM_STATUS_VALUE_OK
  | typeof STREAM_STATUS_VALUE_ERROR
  | typeof STREAM_STATUS_VALUE_CLIENT_DISCONNECTED
  | typeof STREAM_STATUS_VALUE_STREAM_ERROR;

// --- OpenTelemetry GenAI semantic conventions (copied: status "Development") ---
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name' as const;
export const GEN_AI_OPERATION_NAME_VALUE_CHAT = 'chat' as const;
export const GEN_AI_OPERATION_NAME_VALUE_TEXT_COMPLETION = 'text_completion' as const;
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name' as const;
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id' as const;
export const ATTR_GEN_AI_OUTPUT_TYPE = 'gen_ai.output.type' as const;
export const ATTR_GEN_AI_REQUEST_CHOICE_COUNT = 'gen_ai.request.choice.count' as const;
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model' as const;
export const ATTR_GEN_AI_REQUEST_SEED = 'gen_ai.request.seed' as const;
export const ATTR_GEN_AI_REQUEST_STREAM = 'gen_ai.request.stream' as const;
export const ATTR_GEN_AI_REQUEST_TEMPERATURE = 'gen_ai.request.temperature' as const;
export const ATTR_GEN_AI_REQUEST_TOP_P = 'gen_ai.request.top_p' as const;
export const ATTR_GEN_AI_REQUEST_TOP_K = 'gen_ai.request.top_k' as const;
export const ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY = 'gen_ai.request.frequency_penalty' as const;
export const ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY = 'gen_ai.request.presence_penalty' as const;
export const ATTR_GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens' as const;
export const ATTR_GEN_AI_REQUEST_STOP_SEQUENCES = 'gen_ai.request.stop_sequences' as const;
export const ATTR_GEN_AI_RESPONSE_ID = 'gen_ai.response.id' as const;
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model' as const;
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons' as const;
export const ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk' as const;
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens' as const;
export const ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = 'gen_ai.usage.reasoning.output_tokens' as const;
export const ATTR_GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages' as const;
export const ATTR_GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages' as const;
export const ATTR_GEN_AI_SYSTEM_INSTRUCTIONS = 'gen_ai.system_instructions' as const;
export const ATTR_GEN_AI_TOOL_DEFINITIONS = 'gen_ai.tool.definitions' as const;
export const ATTR_ERROR_TYPE = 'error.type' as const;
export const ATTR_SERVER_ADDRESS = 'server.address' as const;
export const ATTR_SERVER_PORT = 'server.port' as const;
export const ATTR_SESSION_ID = 'session.id' as const;
export const GEN_AI_PROVIDER_NAME_VALUE_VLLM = 'vllm' as const;
export const GEN_AI_PROVIDER_NAME_VALUE_SGLANG = 'sglang' as const;
export const GEN_AI_PROVIDER_NAME_VALUE_OPENAI = 'openai' as const;

// --- rewards (docs/architecture.md): emit only the v0.3 format; read all of them ---
export const REWARD_SPAN_NAME = 'agentlightning.annotation' as const;
export const LEGACY_REWARD_SPAN_NAME = 'agentlightning.reward' as const;
export const REWARD_ATTR_PREFIX = 'agentlightning.reward' as const;
export const rewardNameAttr = (index: number): string => `agentlightning.reward.${index}.name`;
export const rewardValueAttr = (index: number): string => `agentlightning.reward.${index}.value`;
export const PRIMARY_REWARD_NAME = 'primary' as const;
export const ATTR_LEGACY_REWARD = 'reward' as const;
export const ATTR_AGENTOPS_TASK_OUTPUT = 'agentops.task.output' as const;
export const ATTR_AGENTOPS_ENTITY_OUTPUT = 'agentops.entity.output' as const;

// --- legacy producers accepted on read / ingest (docs/architecture.md) ---
export const LEGACY_LITELLM_REQUEST_SPAN = 'litellm_request' as const;
export const LEGACY_RAW_GEN_AI_REQUEST_SPAN = 'raw_gen_ai_request' as const;
export const ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS = 'llm.hosted_vllm.prompt_token_ids' as const;
export const ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS = 'llm.hosted_vllm.response_token_ids' as const;
export const ATTR_LEGACY_VLLM_CHOICES = 'llm.hosted_vllm.choices' as const;
export const ATTR_LEGACY_VLLM_ID = 'llm.hosted_vllm.id' as const;

// --- agent-lightning v1 events posted to /api/rollouts/{rid}/attempt/{aid}/events (docs/agl-v1.md) ---
/** The v1 `event_type` of a span stored for a posted event (reward events also carry the v0.3 reward keys). */
export const ATTR_AGL_V1_EVENT_TYPE = 'rollgate.agl_v1.event_type' as const;
/** The posted event's `data`, as JSON. */
export const ATTR_AGL_V1_EVENT_DATA = 'rollgate.agl_v1.event_data' as const;

// --- faithful history (docs/trajectories.md): what the gateway did with a chat call's history ---
/** `faithful` on every chat call of a pool with `history.mode: "faithful"`. */
export const ATTR_HISTORY_MODE = 'rollgate.history.mode' as const;
export const ATTR_HISTORY_STATUS = 'rollgate.history.status' as const;
/** The history continued what was served with nothing to splice (or the call starts a rollout). */
export const HISTORY_STATUS_VALUE_LINEAR = 'linear' as const;
/** The history continued what was served once the served ids of some assistant turns were spliced back. */
export const HISTORY_STATUS_VALUE_HEALED = 'healed' as const;
/** The history does not continue what was served: a new segment (training row) starts, or the call was refused. */
export const HISTORY_STATUS_VALUE_FORKED = 'forked' as const;
/** The call went to the chat route as sent (a feature a token-in completion cannot serve, or no render). */
export const HISTORY_STATUS_VALUE_BYPASSED = 'bypassed' as const;
/** Assistant turns of this call's history whose served ids differ from the engine's rendering of them. */
export const ATTR_HISTORY_HEALED_TURNS = 'rollgate.history.healed_turns' as const;
/** Which segment of the rollout attempt the call belongs to (0, 1, ...): each segment is one training row. */
export const ATTR_HISTORY_SEGMENT = 'rollgate.history.segment' as const;
/** Why a forked call's history does not continue what was served (splice.ts ForkReason). */
export const ATTR_HISTORY_FORK_REASON = 'rollgate.history.fork_reason' as const;
export const ATTR_HISTORY_FORK_DETAIL = 'rollgate.history.fork_detail' as const;
/** What the pool's `history.onMismatch` did with a fork: reset, error or passthrough. */
export const ATTR_HISTORY_ON_MISMATCH = 'rollgate.history.on_mismatch' as const;
/**
 * Why a bypassed call went to the chat route: `auxiliary` (housekeeping never touches the served ids), the request
 * key faithful history cannot serve, or render_failed.
 */
export const ATTR_HISTORY_BYPASS_REASON = 'rollgate.history.bypass_reason' as const;
