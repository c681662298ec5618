// One linear stretch of a rollout's conversation as the engine saw it: the last prompt it was given (served ids of
// every earlier assistant turn spliced in), the ids it generated for it, and the agent-visible turns that go with
// the prompt's assistant messages. The next call of the same conversation continues it; a call that does not
// starts another segment (a new training row), never a wrong splice.
import type { AssistantTurn } from './assistant-turn.js';
import type { PromptBlock } from './chat-family.js';

export interface Segment {
  /** 0 for the rollout's first segment, then 1, 2, ... (what the span reports). */
  readonly index: number;
  /** The last prompt sent to the engine. */
  readonly prompt: Int32Array;
  readonly promptBlocks: readonly PromptBlock[];
  /** The turn of each closed assistant message of the prompt, in order. */
  readonly turns: readonly AssistantTurn[];
  /** What the engine generated for `prompt`, the EOS included; null until a call committed its answer. */
  readonly response: Int32Array | null;
  /** The agent-visible answer of `response`. */
  readonly answer: AssistantTurn | null;
  /** Bumped by every commit: a plan made against an older state commits into a new segment instead. */
  readonly version: number;
}

/** Tokens a segment holds (what the session bound counts). */
export function segmentTokens(segment: Segment): number {
  return segment.prompt.length + (segment.response?.length ?? 0);
}
