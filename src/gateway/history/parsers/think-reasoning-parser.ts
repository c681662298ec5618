// vLLM's reasoning parser for `<think>...</think>` models (`--reasoning-parser qwen3`), whole answers and chunk by
// chunk, so a token-in generation reaches the agent with its reasoning split off exactly as the chat route splits it.
//
// Whole answer: the text splits at `</think>`; a leading `<think>` is dropped; text with no think tag is all content
// (the model answered without thinking); an unclosed `<think>` (cut by max_tokens) is all reasoning.
// Stream: a chunk that is only `<think>` or only `</think>` yields nothing (vLLM still sends the chunk, empty, with
// its ids); the think tags are recognised by token id, as vLLM does.

/** One stream delta before it is written: the members vLLM's DeltaMessage would carry. */
export interface AnswerDelta {
  content?: string | null;
  reasoning?: string | null;
  tool_calls?: Record<string, unknown>[];
}

export interface ReasoningSplit {
  readonly reasoning: string | null;
  readonly content: string | null;
}

export interface ReasoningStreamStep {
  readonly previousIds: readonly number[];
  readonly deltaIds: readonly number[];
  readonly deltaText: string;
}

export interface ReasoningParser {
  readonly startId: number;
  readonly endId: number;
  extract(text: string): ReasoningSplit;
  /** One chunk's delta; null while the parser holds the chunk back. */
  stream(step: ReasoningStreamStep): AnswerDelta | null;
  /** Whether reasoning ends within these ids (vLLM's is_reasoning_end on a chunk). */
  isEnd(ids: readonly number[]): boolean;
  /** The ids after the last `</think>` (vLLM's extract_content_ids). */
  contentIds(ids: readonly number[]): number[];
}

const START = '<think>';
const END = '</think>';

/** Reasoning and content of a chunk that holds `</think>`, with `from` the start of its reasoning text. */
function splitAtEnd(text: string, from: number): AnswerDelta {
  const at = text.indexOf(END);
  return { reasoning: text.slice(from, at), content: text.slice(at + END.length) || null };
}

export function createThinkReasoningParser(ids: { startId: number; endId: number }): ReasoningParser {
  const { startId, endId } = ids;
  return {
    startId,
    endId,
    extract(text) {
      const startAt = text.indexOf(START);
      const rest = startAt >= 0 ? text.slice(startAt + START.length) : text;
      const endAt = rest.indexOf(END);
      if (endAt >= 0) {
        return { reasoning: rest.slice(0, endAt), content: rest.slice(endAt + END.length) || null };
      }
      return startAt >= 0 ? { reasoning: rest, content: null } : { reasoning: null, content: text };
    },
    stream({ previousIds, deltaIds, deltaText }) {
      const only = deltaIds.length === 1 ? deltaIds[0] : undefined;
      if (only === startId || only === endId) return null;
      const ends = deltaIds.includes(endId);
      if (previousIds.includes(startId)) {
        if (ends) return splitAtEnd(deltaText, 0);
        return previousIds.includes(endId) ? { content: deltaText } : { reasoning: deltaText };
      }
      if (deltaIds.includes(startId)) {
        const from = deltaText.indexOf(START) + START.length;
        return ends ? splitAtEnd(deltaText, from) : { reasoning: deltaText.slice(from) };
      }
      // No <think> generated yet: reasoning until a </think> shows up (templates that open the block themselves).
      if (ends) return splitAtEnd(deltaText, 0);
      return previousIds.includes(endId) ? { content: deltaText } : { reasoning: deltaText };
    },
    isEnd: (chunkIds) => chunkIds.includes(endId),
    contentIds(chunkIds) {
      const at = chunkIds.lastIndexOf(endId);
      return at < 0 || at === chunkIds.length - 1 ? [] : chunkIds.slice(at + 1);
    },
  };
}
