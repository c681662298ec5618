// One typed reader of a stored call: from a stored span's attributes to the facts the training readers, the weight
// swap's resubmission and the Responses store act on (token ids, logprobs, versions, outcome, marks). Each
// attribute is read and checked here once, under one name, instead of by string key in every reader; what a value
// of the wrong type means (absent) is decided here too. A span is read once however many readers ask: the result
// is kept beside its attributes object (a WeakMap, so it goes with the span).
//
// Only rollgate's own attribute names are read (span-attributes.ts). Older producers' shapes (LiteLLM's stringified
// lists, Weave's prefixed keys) stay with the adapter that reads them (adapters/llm-call.ts), as a fallback for
// the calls this reader finds no canonical value in.
import * as A from './span-attributes.js';

/** A stored span's attributes (the store's `Attributes`, any JSON value per key). */
export type StoredAttributes = Readonly<Record<string, unknown>>;

/** `[start, end, version]`: response ids `start..end-1` were computed by `version`. */
export type VersionSegment = readonly [number, number, number];

/** What `rollgate.model_version.segments` holds: usable only for a response of exactly `end` ids. */
export interface RecordedSegments {
  /** In order and contiguous from 0; null when the recorded value is not such a list (unusable). */
  readonly segments: readonly VersionSegment[] | null;
  /** The response length they cover (the last segment's end; 0 for none or unusable). */
  readonly end: number;
}

/** The integer dtypes routed experts are stored in (`rollgate.routed_experts.dtype`). */
export const ROUTES_DTYPES = ['uint8', 'uint16', 'int16', 'int32'] as const;
export type RoutesDtype = (typeof ROUTES_DTYPES)[number];

/** A call's stored MoE routes (docs/training-data.md#routed-experts): base64 bytes, `[rows, layers, top_k]`, dtype. */
export interface StoredRoutes {
  readonly data: string;
  readonly shape: readonly [number, number, number];
  readonly dtype: RoutesDtype;
}

export interface StoredCall {
  /** `rollgate.api`: which API the agent called. */
  readonly api: string | null;
  /** `gen_ai.response.id`, non-empty. */
  readonly responseId: string | null;
  /** `rollgate.client_retry_count` (X-Stainless-Retry-Count), a positive integer, else 0. */
  readonly clientRetryCount: number;
  /** Prompt token ids: a stored list of integers; null when absent or not one. */
  readonly promptIds: readonly number[] | null;
  /** Response token ids (first choice), likewise. */
  readonly responseIds: readonly number[] | null;
  /** Chosen-token logprobs as stored: a list of numbers (finite or not); null when absent or not one. */
  readonly responseLogprobs: readonly number[] | null;
  /** `rollgate.model_version`, a finite number. */
  readonly modelVersion: number | null;
  /** `rollgate.model_version.segments`; null when none is recorded. */
  readonly versionSegments: RecordedSegments | null;
  /** `rollgate.model_version.changed_in_flight` is true. */
  readonly versionChangedInFlight: boolean;
  /** `rollgate.engine.max_model_len`, a positive integer. */
  readonly engineMaxModelLen: number | null;
  /** The agent's sampling made raw logprobs another distribution's (a non-empty list of parameters was marked). */
  readonly logprobsRawAdjusted: boolean;
  /** Sequence id of the aborted call this one resubmitted after a weight swap. */
  readonly resubmitOf: number | null;
  /** `rollgate.call.role` is `auxiliary` (the harness's housekeeping). */
  readonly auxiliary: boolean;
  /** `rollgate.call.outcome`. */
  readonly outcome: string | null;
  /** A finish reason of the answer is the engine's `abort`. */
  readonly abortFinish: boolean;
  /** `rollgate.token_ids.status` and `.reason`. */
  readonly tokenIdsStatus: string | null;
  readonly tokenIdsReason: string | null;
  /** Usage was computed from the ids (so it proves nothing about them). */
  readonly usageDerived: boolean;
  /** `gen_ai.usage.output_tokens`, an integer. */
  readonly outputTokens: number | null;
  /** `gen_ai.request.choice.count` (n). */
  readonly choiceCount: number | null;
  /** A second choice's token ids are recorded (several choices). */
  readonly hasSecondChoice: boolean;
  /** `rollgate.stream.status`. */
  readonly streamStatus: string | null;
  /** `rollgate.upstream.status_code`. */
  readonly upstreamStatusCode: number | null;
  /** The GenAI message attributes as stored (JSON text or a list); the messages are parsed by their readers. */
  readonly inputMessages: unknown;
  readonly outputMessages: unknown;
  readonly systemInstructions: unknown;
  readonly toolDefinitions: unknown;
  /** `rollgate.routed_experts.status`: set on every answered call of a pool that captures routes. */
  readonly routedExpertsStatus: string | null;
  /** The routes with a usable shape and dtype; null otherwise. */
  readonly routedExperts: StoredRoutes | null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function finite(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function integers(value: unknown): readonly number[] | null {
  if (!Array.isArray(value)) return null;
  for (const item of value) if (!Number.isInteger(item)) return null;
  return value as number[];
}

function numbers(value: unknown): readonly number[] | null {
  if (!Array.isArray(value)) return null;
  for (const item of value) if (typeof item !== 'number') return null;
  return value as number[];
}

function routesOf(attrs: StoredAttributes): StoredRoutes | null {
  const data = attrs[A.ATTR_ROUTED_EXPERTS];
  const shape = integers(attrs[A.ATTR_ROUTED_EXPERTS_SHAPE]);
  const dtype = attrs[A.ATTR_ROUTED_EXPERTS_DTYPE];
  if (typeof data !== 'string' || shape === null || shape.length !== 3) return null;
  const known = ROUTES_DTYPES.find((d) => d === dtype);
  const [rows = 0, layers = 0, topK = 0] = shape;
  return known === undefined ? null : { data, shape: [rows, layers, topK], dtype: known };
}

function retryCount(value: unknown): number {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

function isSegment(value: unknown): value is VersionSegment {
  return (
    Array.isArray(value) &&
    value.length === 3 &&
    value.every((v) => Number.isInteger(v)) &&
    (value[0] as number) >= 0 &&
    (value[1] as number) > (value[0] as number)
  );
}

const UNUSABLE_SEGMENTS: RecordedSegments = { segments: null, end: 0 };

/** Reads a recorded segments value (JSON text); null when nothing is recorded. */
export function parseVersionSegments(value: unknown): RecordedSegments | null {
  if (value === undefined) return null;
  if (typeof value !== 'string') return UNUSABLE_SEGMENTS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return UNUSABLE_SEGMENTS;
  }
  if (!Array.isArray(parsed) || !parsed.every(isSegment)) return UNUSABLE_SEGMENTS;
  let end = 0;
  for (const [start, stop] of parsed) {
    if (start !== end) return UNUSABLE_SEGMENTS;
    end = stop;
  }
  return { segments: parsed, end };
}

/** The recorded segments when they cover exactly `length` response ids; null otherwise (or when none). */
export function segmentsOver(recorded: RecordedSegments | null, length: number): readonly VersionSegment[] | null {
  if (recorded === null || recorded.segments === null) return null;
  return recorded.end === length ? recorded.segments : null;
}

function read(attrs: StoredAttributes): StoredCall {
  const responseId = attrs[A.ATTR_GEN_AI_RESPONSE_ID];
  const reasons = attrs[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS];
  const outputTokens = attrs[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS];
  const maxModelLen = attrs[A.ATTR_ENGINE_MAX_MODEL_LEN];
  const adjusted = attrs[A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS];
  const resubmitOf = attrs[A.ATTR_RESUBMIT_OF];
  const choiceCount = attrs[A.ATTR_GEN_AI_REQUEST_CHOICE_COUNT];
  const upstream = attrs[A.ATTR_UPSTREAM_STATUS_CODE];
  return {
    api: text(attrs[A.ATTR_API]),
    responseId: typeof responseId === 'string' && responseId !== '' ? responseId : null,
    clientRetryCount: retryCount(attrs[A.ATTR_CLIENT_RETRY_COUNT]),
    promptIds: integers(attrs[A.ATTR_PROMPT_TOKEN_IDS]),
    responseIds: integers(attrs[A.ATTR_RESPONSE_TOKEN_IDS]),
    responseLogprobs: numbers(attrs[A.ATTR_RESPONSE_LOGPROBS]),
    modelVersion: finite(attrs[A.ATTR_MODEL_VERSION]),
    versionSegments: parseVersionSegments(attrs[A.ATTR_MODEL_VERSION_SEGMENTS]),
    versionChangedInFlight: attrs[A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT] === true,
    engineMaxModelLen:
      typeof maxModelLen === 'number' && Number.isInteger(maxModelLen) && maxModelLen > 0 ? maxModelLen : null,
    logprobsRawAdjusted: Array.isArray(adjusted) && adjusted.length > 0,
    resubmitOf: typeof resubmitOf === 'number' ? resubmitOf : null,
    auxiliary: attrs[A.ATTR_CALL_ROLE] === A.CALL_ROLE_VALUE_AUXILIARY,
    outcome: text(attrs[A.ATTR_CALL_OUTCOME]),
    abortFinish: Array.isArray(reasons) && reasons.some((r) => r === A.FINISH_REASON_VALUE_ABORT),
    tokenIdsStatus: text(attrs[A.ATTR_TOKEN_IDS_STATUS]),
    tokenIdsReason: text(attrs[A.ATTR_TOKEN_IDS_REASON]),
    usageDerived: attrs[A.ATTR_USAGE_DERIVED] === true,
    outputTokens: typeof outputTokens === 'number' && Number.isInteger(outputTokens) ? outputTokens : null,
    choiceCount: typeof choiceCount === 'number' ? choiceCount : null,
    hasSecondChoice: attrs[A.choiceTokenIdsAttr(1)] !== undefined,
    streamStatus: text(attrs[A.ATTR_STREAM_STATUS]),
    upstreamStatusCode: typeof upstream === 'number' ? upstream : null,
    inputMessages: attrs[A.ATTR_GEN_AI_INPUT_MESSAGES],
    outputMessages: attrs[A.ATTR_GEN_AI_OUTPUT_MESSAGES],
    systemInstructions: attrs[A.ATTR_GEN_AI_SYSTEM_INSTRUCTIONS],
    toolDefinitions: attrs[A.ATTR_GEN_AI_TOOL_DEFINITIONS],
    routedExpertsStatus: text(attrs[A.ATTR_ROUTED_EXPERTS_STATUS]),
    routedExperts: routesOf(attrs),
  };
}

const readCalls = new WeakMap<StoredAttributes, StoredCall>();

/**
 * The stored call in `attrs`. Read once per attributes object: the store hands out spans whose attributes are not
 * changed afterwards, so every later reader of the same span gets the same answer without reading it again.
 */
export function readStoredCall(attrs: StoredAttributes): StoredCall {
  let call = readCalls.get(attrs);
  if (call === undefined) {
    call = read(attrs);
    readCalls.set(attrs, call);
  }
  return call;
}
