// The evidence a critique prompt sees: per rollout its status, final reward, chat messages and a trimmed
// view of its spans. Token ids and logprobs never go in (they are noise to a text model and can be huge),
// and the whole payload is held under a size cap (docs/failure-classes.md#58).
import { type ChatConversation, spansToMessages } from '../../adapters/messages.js';
import type { JsonObject, JsonValue, RolloutStatus, Span } from '../../store/core/types.js';
import type { TaskResult } from '../evaluation.js';

export interface Experiment {
  status: RolloutStatus | 'timeout';
  final_reward: number | null;
  messages: ChatConversation[];
  spans: JsonObject[];
}

const HIDDEN_ATTRIBUTE = /token_ids|logprobs/i;
/** What a critique can use: the conversation, the model settings, rewards, errors, tool calls. */
const SHOWN_ATTRIBUTE = /^(gen_ai\.|agentlightning\.reward|agentops\.|tool\.|error\.type$|reward$)/;
const TRUNCATION_MARK = '…[truncated]';

/**
 * A span as a critique reads it: name, order, status and content attributes only. Gateway bookkeeping
 * (ids, backends, request overrides) and token-level data stay out.
 */
export function sanitizeSpan(span: Span): JsonObject {
  const attributes: JsonObject = {};
  for (const [key, value] of Object.entries(span.attributes ?? {})) {
    if (HIDDEN_ATTRIBUTE.test(key) || !SHOWN_ATTRIBUTE.test(key)) continue;
    attributes[key] = value as JsonValue;
  }
  return {
    name: span.name,
    sequence_id: span.sequence_id,
    status: span.status?.status_code ?? 'UNSET',
    attributes,
  };
}

export function toExperiment(result: TaskResult): Experiment {
  return {
    status: result.timedOut ? 'timeout' : result.status,
    final_reward: result.reward,
    messages: spansToMessages(result.spans),
    spans: result.spans.map(sanitizeSpan),
  };
}

function truncateStrings(value: unknown, maxLength: number): unknown {
  if (typeof value === 'string') {
    return value.length > maxLength ? value.slice(0, maxLength) + TRUNCATION_MARK : value;
  }
  if (Array.isArray(value)) return value.map((v) => truncateStrings(v, maxLength));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = truncateStrings(v, maxLength);
    return out;
  }
  return value;
}

/**
 * Shrinks experiments until their JSON fits `maxChars`: long strings are cut (halving the limit each
 * step), then span views are dropped, then experiments from the end. Messages are what critiques need most,
 * so they go last.
 */
export function boundExperiments(experiments: readonly Experiment[], maxChars: number): Experiment[] {
  const size = (xs: readonly Experiment[]) => JSON.stringify(xs).length;
  let current = [...experiments];
  if (size(current) <= maxChars) return current;
  for (let limit = 4000; limit >= 100; limit = Math.floor(limit / 2)) {
    current = experiments.map((e) => truncateStrings(e, limit) as Experiment);
    if (size(current) <= maxChars) return current;
  }
  current = current.map((e) => ({ ...e, spans: [] }));
  while (current.length > 1 && size(current) > maxChars) current.pop();
  if (size(current) > maxChars) {
    current = current.map((e) => ({ ...e, messages: truncateStrings(e.messages, 50) as ChatConversation[] }));
  }
  return current;
}
