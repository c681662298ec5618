// Reads what the dashboard shows out of stored spans: rewards (every format of docs/architecture.md)
// and LLM calls (the canonical attributes of docs/architecture.md plus the GenAI message JSON of docs/architecture.md).
import { readLlmCall, readTokenIds } from '../../src/adapters/llm-call.js';
import { spanToConversation } from '../../src/adapters/messages.js';
import {
  findFinalReward,
  getRewardValue,
  type RewardDimension,
  readRewardDimensions,
} from '../../src/adapters/reward.js';
import { sortSpansBySequence } from '../../src/adapters/span-order.js';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS,
  ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS,
  ATTR_LOGPROBS_CONTENT,
  ATTR_PROMPT_TOKEN_IDS,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_RESPONSE_TOKEN_IDS,
  ATTR_TOKEN_IDS_STATUS,
  LEGACY_LITELLM_REQUEST_SPAN,
  LEGACY_RAW_GEN_AI_REQUEST_SPAN,
} from '../../src/contracts/span-attributes.js';
import type { Attributes, AttributeValue, Span } from '../../src/store/core/types.js';

export type { RewardDimension };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function asNumber(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '') {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : null;
  }
  return null;
}

/**
 * All reward dimensions of a span, primary first; empty when the span is not a reward. Detection is
 * the adapters' (every format of docs/architecture.md); named dimensions only exist in the v0.3 format.
 */
export function rewardsOf(span: Span): RewardDimension[] {
  const primary = getRewardValue(span);
  if (primary === null) return [];
  const dims = readRewardDimensions(span.attributes);
  return dims[0]?.value === primary ? dims : [{ name: 'reward', value: primary }];
}

/** The last reward in sequence order (agent-lightning's find_final_reward). */
export function finalReward(spans: readonly Span[]): number | null {
  return findFinalReward(sortSpansBySequence(spans));
}

export interface TopLogprob {
  readonly token: string;
  readonly logprob: number;
}

export interface ResponseToken {
  readonly id: number | null;
  readonly text: string | null;
  readonly logprob: number | null;
  readonly top: readonly TopLogprob[];
}

export type MessagePart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tool_call'; readonly id: string; readonly name: string; readonly text: string }
  | { readonly kind: 'tool_result'; readonly id: string; readonly text: string }
  | { readonly kind: 'other'; readonly text: string };

export interface ChatMessage {
  readonly role: string;
  readonly parts: readonly MessagePart[];
  readonly finishReason: string | null;
}

export interface LlmCall {
  readonly model: string | null;
  readonly operation: string | null;
  readonly promptTokenIds: readonly number[] | null;
  readonly responseTokens: readonly ResponseToken[];
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly finishReasons: readonly string[];
  readonly tokenIdsStatus: string | null;
  readonly inputMessages: readonly ChatMessage[];
  readonly outputMessages: readonly ChatMessage[];
}

export function isLlmSpan(span: Span): boolean {
  const a = span.attributes;
  return (
    a[ATTR_PROMPT_TOKEN_IDS] !== undefined ||
    a[ATTR_RESPONSE_TOKEN_IDS] !== undefined ||
    a[ATTR_GEN_AI_INPUT_MESSAGES] !== undefined ||
    a[ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS] !== undefined ||
    a[ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS] !== undefined ||
    span.name === LEGACY_LITELLM_REQUEST_SPAN ||
    span.name === LEGACY_RAW_GEN_AI_REQUEST_SPAN ||
    a[ATTR_GEN_AI_OPERATION_NAME] === 'chat' ||
    a[ATTR_GEN_AI_OPERATION_NAME] === 'text_completion'
  );
}

function stringify(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? '';
  } catch {
    return String(value);
  }
}

function toPart(raw: unknown): MessagePart {
  if (typeof raw === 'string') return { kind: 'text', text: raw };
  if (typeof raw !== 'object' || raw === null) return { kind: 'other', text: stringify(raw) };
  const part = raw as Record<string, unknown>;
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { kind: 'text', text: stringify(part.content ?? '') };
    case 'tool_call':
      return {
        kind: 'tool_call',
        id: String(part.id ?? ''),
        name: String(part.name ?? ''),
        text: stringify(part.arguments ?? ''),
      };
    case 'tool_call_response':
      return { kind: 'tool_result', id: String(part.id ?? ''), text: stringify(part.result ?? part.response ?? '') };
    default:
      return { kind: 'other', text: stringify(part) };
  }
}

function toMessages(raw: AttributeValue | undefined): ChatMessage[] {
  if (typeof raw !== 'string') return [];
  const parsed = parseJson(raw);
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((item: unknown): ChatMessage[] => {
    if (typeof item !== 'object' || item === null) return [];
    const message = item as Record<string, unknown>;
    const parts = Array.isArray(message.parts)
      ? message.parts.map(toPart)
      : message.content !== undefined
        ? [toPart(typeof message.content === 'string' ? message.content : { type: 'other', ...message })]
        : [];
    return [
      {
        role: typeof message.role === 'string' ? message.role : 'unknown',
        parts,
        finishReason: typeof message.finish_reason === 'string' ? message.finish_reason : null,
      },
    ];
  });
}

function systemMessage(raw: AttributeValue | undefined): ChatMessage[] {
  if (typeof raw !== 'string') return [];
  const parsed = parseJson(raw);
  const parts = Array.isArray(parsed) ? parsed.map(toPart) : [{ kind: 'text' as const, text: raw }];
  return parts.length > 0 ? [{ role: 'system', parts, finishReason: null }] : [];
}

interface LogprobEntry {
  token: string | null;
  logprob: number | null;
  top: TopLogprob[];
}

function logprobEntries(raw: AttributeValue | undefined): LogprobEntry[] {
  if (typeof raw !== 'string') return [];
  const parsed = parseJson(raw);
  if (!Array.isArray(parsed)) return [];
  return parsed.map((item: unknown): LogprobEntry => {
    if (typeof item !== 'object' || item === null) return { token: null, logprob: null, top: [] };
    const entry = item as Record<string, unknown>;
    const top = Array.isArray(entry.top_logprobs)
      ? entry.top_logprobs.flatMap((t: unknown): TopLogprob[] => {
          if (typeof t !== 'object' || t === null) return [];
          const rec = t as Record<string, unknown>;
          const logprob = asNumber(rec.logprob);
          return typeof rec.token === 'string' && logprob !== null ? [{ token: rec.token, logprob }] : [];
        })
      : [];
    return { token: typeof entry.token === 'string' ? entry.token : null, logprob: asNumber(entry.logprob), top };
  });
}

function nonEmpty(ids: readonly number[]): readonly number[] | null {
  return ids.length > 0 ? ids : null;
}

function responseTokens(attributes: Attributes, ids: readonly number[] | null): ResponseToken[] {
  const chosen = attributes[ATTR_RESPONSE_LOGPROBS];
  const logprobs = Array.isArray(chosen) && chosen.every((v) => typeof v === 'number') ? (chosen as number[]) : null;
  const entries = logprobEntries(attributes[ATTR_LOGPROBS_CONTENT]);
  const length = Math.max(ids?.length ?? 0, entries.length, logprobs?.length ?? 0);
  const tokens: ResponseToken[] = [];
  for (let i = 0; i < length; i++) {
    const entry = entries[i];
    tokens.push({
      id: ids?.[i] ?? null,
      text: entry?.token ?? null,
      logprob: logprobs?.[i] ?? entry?.logprob ?? null,
      top: entry?.top ?? [],
    });
  }
  return tokens;
}

function stringArray(value: AttributeValue | undefined): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'string') return [value];
  return [];
}

/** Producers without the GenAI JSON attributes (the flattened legacy form): one list, in call order. */
function legacyMessages(span: Span): ChatMessage[] {
  const conversation = spanToConversation(span);
  if (!conversation) return [];
  return conversation.messages.map((m) => ({
    role: m.role,
    parts: [
      ...(m.content !== null && m.content !== '' ? [{ kind: 'text' as const, text: m.content }] : []),
      ...(m.tool_calls ?? []).map((c) => ({
        kind: 'tool_call' as const,
        id: c.id,
        name: c.function.name,
        text: c.function.arguments,
      })),
    ],
    finishReason: null,
  }));
}

export function llmCallOf(span: Span): LlmCall {
  const a = span.attributes;
  // The adapters read every known producer's token-id shape, but only when a call has both sides;
  // a failed call may still have its prompt, so the canonical attributes are read on their own too.
  const adapted = readLlmCall(span);
  const promptTokenIds = adapted?.promptIds ?? nonEmpty(readTokenIds(a[ATTR_PROMPT_TOKEN_IDS]));
  const responseIds = adapted?.responseIds ?? nonEmpty(readTokenIds(a[ATTR_RESPONSE_TOKEN_IDS]));
  const tokens = responseTokens(a, responseIds);
  const model = a[ATTR_GEN_AI_RESPONSE_MODEL] ?? a[ATTR_GEN_AI_REQUEST_MODEL];
  const semconvInput = [
    ...systemMessage(a[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]),
    ...toMessages(a[ATTR_GEN_AI_INPUT_MESSAGES]),
  ];
  const semconvOutput = toMessages(a[ATTR_GEN_AI_OUTPUT_MESSAGES]);
  const isSemconv = semconvInput.length > 0 || semconvOutput.length > 0;
  return {
    model: typeof model === 'string' ? model : null,
    operation: typeof a[ATTR_GEN_AI_OPERATION_NAME] === 'string' ? (a[ATTR_GEN_AI_OPERATION_NAME] as string) : null,
    promptTokenIds,
    responseTokens: tokens,
    inputTokens: asNumber(a[ATTR_GEN_AI_USAGE_INPUT_TOKENS]) ?? promptTokenIds?.length ?? null,
    outputTokens: asNumber(a[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]) ?? (tokens.length > 0 ? tokens.length : null),
    finishReasons: stringArray(a[ATTR_GEN_AI_RESPONSE_FINISH_REASONS]),
    tokenIdsStatus: typeof a[ATTR_TOKEN_IDS_STATUS] === 'string' ? (a[ATTR_TOKEN_IDS_STATUS] as string) : null,
    inputMessages: isSemconv ? semconvInput : legacyMessages(span),
    outputMessages: semconvOutput,
  };
}

/** Spans in the order the store issued them (never by clock: proxies' clocks differ). */
export const inSequenceOrder = sortSpansBySequence;
