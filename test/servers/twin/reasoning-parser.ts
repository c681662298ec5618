// vLLM's reasoning parsers for <think>...</think> models (--reasoning-parser qwen3 | deepseek_r1).
//
// Non-stream: the generated text splits at </think> into reasoning and content; a leading <think> is stripped.
// Output without any think tag is content for qwen3 (the model answered without thinking) and reasoning for
// deepseek_r1 (R1 templates open the <think> block in the prompt). An unclosed <think> (cut by max_tokens) is all
// reasoning. Stream: a chunk made of only <think> or </think> yields no delta (the chunk is still sent, empty,
// with its token ids).
import type { ReasoningParserName } from './types.js';

export interface DeltaMessage {
  role?: string;
  content?: string | null;
  reasoning?: string | null;
  tool_calls?: Record<string, unknown>[];
}

export interface ReasoningStreamInput {
  previousIds: readonly number[];
  deltaIds: readonly number[];
  deltaText: string;
}

export interface ReasoningParser {
  readonly name: ReasoningParserName;
  readonly startId: number;
  readonly endId: number;
  extract(text: string): { reasoning: string | null; content: string | null };
  /** One chunk's delta; null while the parser holds it back. */
  stream(input: ReasoningStreamInput): DeltaMessage | null;
  /** Whether reasoning has ended within `ids` (vLLM's is_reasoning_end on a chunk's ids). */
  isEnd(ids: readonly number[]): boolean;
  /** The ids after </think> (vLLM's extract_content_ids). */
  contentIds(ids: readonly number[]): number[];
}

const START = '<think>';
const END = '</think>';

export function createReasoningParser(
  name: ReasoningParserName,
  ids: { startId: number; endId: number },
): ReasoningParser {
  const { startId, endId } = ids;
  return {
    name,
    startId,
    endId,
    extract(text) {
      const startAt = text.indexOf(START);
      const hadStart = startAt >= 0;
      const rest = hadStart ? text.slice(startAt + START.length) : text;
      const endAt = rest.indexOf(END);
      if (endAt >= 0) {
        const reasoning = rest.slice(0, endAt);
        const content = rest.slice(endAt + END.length);
        return { reasoning, content: content || null };
      }
      if (!hadStart && name === 'qwen3') return { reasoning: null, content: text };
      return { reasoning: rest, content: null };
    },
    stream({ previousIds, deltaIds, deltaText }) {
      if (deltaIds.length === 1 && (deltaIds[0] === startId || deltaIds[0] === endId)) return null;
      if (previousIds.includes(startId)) {
        if (deltaIds.includes(endId)) {
          const at = deltaText.indexOf(END);
          return { reasoning: deltaText.slice(0, at), content: deltaText.slice(at + END.length) || null };
        }
        if (previousIds.includes(endId)) return { content: deltaText };
        return { reasoning: deltaText };
      }
      if (deltaIds.includes(startId)) {
        const from = deltaText.indexOf(START) + START.length;
        if (deltaIds.includes(endId)) {
          const at = deltaText.indexOf(END);
          return { reasoning: deltaText.slice(from, at), content: deltaText.slice(at + END.length) || null };
        }
        return { reasoning: deltaText.slice(from) };
      }
      // No <think> generated: R1 style (the prompt opened the block) until a </think> shows up.
      if (deltaIds.includes(endId)) {
        const at = deltaText.indexOf(END);
        return { reasoning: deltaText.slice(0, at), content: deltaText.slice(at + END.length) || null };
      }
      if (previousIds.includes(endId)) return { content: deltaText };
      return { reasoning: deltaText };
    },
    isEnd: (chunkIds) => chunkIds.includes(endId),
    contentIds(chunkIds) {
      const at = chunkIds.lastIndexOf(endId);
      return at < 0 || at === chunkIds.length - 1 ? [] : chunkIds.slice(at + 1);
    },
  };
}
