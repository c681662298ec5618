// The record of one call as the gateway captured it (content, tool calls, token ids and logprobs per choice), its
// canonical token-level form (what trainers read) and the values a call record holds under the span attribute
// names: shared by the capture code, the call record (src/gateway/recording/), the OpenTelemetry export and the
// store's readers, so it sits below all of them and imports nothing but the span attribute names.
import type { LogprobsDropReason, TokenIdsReason, TokenIdsStatus } from './span-attributes.js';

export type Endpoint = 'chat' | 'completions' | 'responses';

/** One chosen token, in the chat `logprobs.content` shape (completions are converted to it). */
export interface LogprobEntry {
  token: string;
  logprob: unknown;
  bytes?: unknown;
  top_logprobs: unknown[];
}

export interface CapturedToolCall {
  id: string | null;
  type: string;
  name: string;
  arguments: string;
}

export interface CapturedChoice {
  readonly index: number;
  role: string;
  content: string | null;
  reasoning: string | null;
  refusal: string | null;
  toolCalls: CapturedToolCall[];
  finishReason: string | null;
  /**
   * Completions put prompt ids on each choice; with several prompts (`prompt: [a, b]`) choice
   * `i = output_index + prompt_index * n` carries its own prompt's ids.
   */
  promptTokenIds: number[] | null;
  tokenIds: number[] | null;
  /** Set when some chunk of this choice carried text but no token ids (ids cannot be trusted whole). */
  tokenIdsGap: boolean;
  logprobs: LogprobEntry[] | null;
}

export interface CapturedUsage {
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadInputTokens: number | null;
  reasoningOutputTokens: number | null;
}

export interface CapturedCall {
  responseId: string | null;
  responseModel: string | null;
  promptTokenIds: number[] | null;
  choices: CapturedChoice[];
  usage: CapturedUsage | null;
}

export interface CanonicalChoice {
  readonly index: number;
  /** This choice's prompt: its own ids (completions, one per prompt), else the call's. */
  readonly promptTokenIds: readonly number[] | null;
  readonly tokenIds: readonly number[] | null;
  /** Same length as tokenIds, all finite and above the -9999 floor, else null (never padded). */
  readonly logprobs: readonly number[] | null;
  /** Why logprobs the engine sent were left out; null when kept or when none came. */
  readonly logprobsDropped: LogprobsDropReason | null;
}

export interface CanonicalUsage extends CapturedUsage {
  readonly derived: boolean;
}

export interface CanonicalRecord {
  /** The first choice's prompt (chat: the call's one prompt). */
  readonly promptTokenIds: readonly number[] | null;
  readonly choices: readonly CanonicalChoice[];
  readonly status: TokenIdsStatus;
  /** Why the status is not ok; null when it is. */
  readonly reason: TokenIdsReason | null;
  /** Some choice ended with the engine's abort finish reason: a truncated answer that looks complete. */
  readonly aborted: boolean;
  readonly usage: CanonicalUsage | null;
}

/**
 * A value a call record holds under a span attribute name: what the store format can keep (finite numbers,
 * homogeneous arrays without holes). Both the stored span and an exported OpenTelemetry span take it as it is.
 */
export type RecordedValue = string | number | boolean | readonly string[] | readonly number[] | readonly boolean[];

export type RecordedAttributes = Record<string, RecordedValue>;
