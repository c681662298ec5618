// Where a request's rendered history meets what the engine was served, and the prompt that keeps the served ids.
//
// The engine renders the request (its own template); the family cuts both id lists into messages. Every message
// up to the segment's last answer must be the same message: other messages token for token (the template renders
// them the same way every time), assistant messages by what the agent kept of the served turn (assistant-turn.ts),
// since the template is free to render those differently (reasoning dropped, arguments re-serialised, whitespace).
// The new prompt is then the engine's own context (last prompt + the ids it generated) followed by the rendering of
// what came after: the served ids of every assistant turn stay as they were generated.
import { type AssistantTurn, sameTurn } from './assistant-turn.js';
import type { ChatFamily, PromptBlock } from './chat-family.js';
import type { Segment } from './segment.js';

export type ForkReason =
  /** No segment to continue (first call after an eviction, a restart, or another replica). */
  | 'no_session'
  /** A non-assistant message before the last answer changed, or one was inserted or removed. */
  | 'history_edited'
  /** An assistant turn is not the one that was served (edited text, other tool calls; reasoning is not compared). */
  | 'assistant_edited'
  /** The request holds fewer messages than the segment already has (dropped or compacted history). */
  | 'history_shorter'
  /** The rendered prompt does not divide into the request's messages the way the family expects. */
  | 'template_unrecognised';

export interface SpliceMatch {
  readonly kind: 'match';
  readonly prompt: number[];
  readonly blocks: readonly PromptBlock[];
  /** Turns of the prompt's closed assistant messages, in order. */
  readonly turns: readonly AssistantTurn[];
  /** Assistant turns whose served ids differ from the engine's rendering of the agent's copy. */
  readonly healedTurns: number;
}

export interface SpliceFork {
  readonly kind: 'fork';
  readonly reason: ForkReason;
  readonly detail: string;
}

export type SpliceResult = SpliceMatch | SpliceFork;

export interface RenderedRequest {
  readonly ids: readonly number[];
  readonly blocks: readonly PromptBlock[];
  /** The request's assistant messages as turns (null: not comparable), in order. */
  readonly turns: readonly (AssistantTurn | null)[];
}

interface ContextView {
  readonly ids: ArrayLike<number>;
  readonly blocks: readonly PromptBlock[];
  /** One per closed assistant block of `blocks`. */
  readonly turns: readonly AssistantTurn[];
}

function fork(reason: ForkReason, detail: string): SpliceFork {
  return { kind: 'fork', reason, detail };
}

interface IdRange {
  readonly ids: ArrayLike<number>;
  readonly start: number;
  readonly end: number;
}

function range(ids: ArrayLike<number>, span: { start: number; end: number }): IdRange {
  return { ids, start: span.start, end: span.end };
}

function sameRange(a: IdRange, b: IdRange): boolean {
  if (a.end - a.start !== b.end - b.start) return false;
  for (let i = 0; i < a.end - a.start; i++) if (a.ids[a.start + i] !== b.ids[b.start + i]) return false;
  return true;
}

/** A message's own tokens: through its end-of-turn token (the separator after it is the template's). */
function turnRange(block: PromptBlock): { start: number; end: number } {
  return { start: block.start, end: block.turnEnd >= 0 ? block.turnEnd + 1 : block.end };
}

/** The engine's context after the segment's last call: its prompt, then the ids it generated as one more message. */
function contextOf(segment: Segment, family: ChatFamily): ContextView | null {
  const response = segment.response;
  const answer = segment.answer;
  const open = segment.promptBlocks.at(-1);
  if (response === null || answer === null || open === undefined) return null;
  const ids = new Int32Array(segment.prompt.length + response.length);
  ids.set(segment.prompt, 0);
  ids.set(response, segment.prompt.length);
  const ended = response.length > 0 && response[response.length - 1] === family.endOfTurnId;
  const served: PromptBlock = {
    start: open.start,
    end: ids.length,
    role: open.role,
    turnEnd: ended ? ids.length - 1 : -1,
  };
  return { ids, blocks: [...segment.promptBlocks.slice(0, -1), served], turns: [...segment.turns, answer] };
}

/** Compares the first `count` blocks; counts assistant turns whose ids the template rendered differently. */
function compareBlocks(options: {
  family: ChatFamily;
  context: ContextView;
  request: RenderedRequest;
  count: number;
}): { healed: number } | SpliceFork {
  const { family, context, request, count } = options;
  let assistant = 0;
  let healed = 0;
  for (let i = 0; i < count; i++) {
    const mine = context.blocks[i];
    const theirs = request.blocks[i];
    if (mine === undefined || theirs === undefined) return fork('template_unrecognised', `message ${i + 1} is missing`);
    if (mine.role !== theirs.role) return fork('history_edited', `message ${i + 1} has another role than before`);
    // Every assistant block of the context is a turn (the served one may lack its end-of-turn token).
    if (mine.role === family.assistantRole) {
      if (theirs.turnEnd < 0) return fork('template_unrecognised', `assistant message ${i + 1} is not closed`);
      const served = context.turns[assistant];
      const seen = request.turns[assistant];
      assistant += 1;
      if (served === undefined || seen === undefined || seen === null || !sameTurn(seen, served)) {
        return fork('assistant_edited', `assistant turn ${assistant} is not the one served`);
      }
      if (!sameRange(range(context.ids, turnRange(mine)), range(request.ids, turnRange(theirs)))) healed += 1;
      continue;
    }
    if (!sameRange(range(context.ids, mine), range(request.ids, theirs))) {
      return fork('history_edited', `message ${i + 1} differs from what the engine was given`);
    }
  }
  return { healed };
}

function closedAssistantCount(family: ChatFamily, blocks: readonly PromptBlock[]): number {
  let n = 0;
  for (const block of blocks) if (block.role === family.assistantRole && block.turnEnd >= 0) n += 1;
  return n;
}

/** Turns of a prompt's closed assistant blocks: the known ones first, then the request's own. */
function promptTurns(known: readonly AssistantTurn[], request: RenderedRequest): AssistantTurn[] | null {
  const turns = [...known];
  for (let i = known.length; i < request.turns.length; i++) {
    const turn = request.turns[i];
    if (turn === undefined || turn === null) return null;
    turns.push(turn);
  }
  return turns;
}

/** Checks that the rendering divides into the request's messages: closed assistant blocks = assistant messages. */
export function recognised(family: ChatFamily, request: RenderedRequest): boolean {
  const last = request.blocks.at(-1);
  return (
    last !== undefined &&
    last.role === family.assistantRole &&
    last.turnEnd < 0 &&
    closedAssistantCount(family, request.blocks) === request.turns.length &&
    request.turns.every((t) => t !== null)
  );
}

/** A segment's start: the request as rendered, nothing to splice. */
export function freshPrompt(request: RenderedRequest): SpliceMatch | SpliceFork {
  const turns = promptTurns([], request);
  if (turns === null) return fork('template_unrecognised', 'an assistant message cannot be compared');
  return { kind: 'match', prompt: [...request.ids], blocks: request.blocks, turns, healedTurns: 0 };
}

/** The prompt that continues `segment` with the request's new messages, or why it cannot. */
export function spliceOnto(options: { family: ChatFamily; segment: Segment; request: RenderedRequest }): SpliceResult {
  const { family, segment, request } = options;
  const context = contextOf(segment, family);
  if (context === null) return fork('no_session', 'the segment has no served answer yet');
  const n = context.blocks.length;
  if (request.blocks.length > n) {
    const compared = compareBlocks({ family, context, request, count: n });
    if ('kind' in compared) return compared;
    const last = request.blocks[n - 1];
    const served = context.blocks[n - 1];
    if (last === undefined || served === undefined || last.turnEnd < 0) {
      return fork('template_unrecognised', 'the last answer is not a closed message in the rendering');
    }
    // Generated ids that end with the end-of-turn token keep it; otherwise (max_tokens, a stop string) the
    // template's own closes the turn.
    const tailStart = served.turnEnd >= 0 ? last.turnEnd + 1 : last.turnEnd;
    const prompt = Array.from(context.ids);
    for (let i = tailStart; i < request.ids.length; i++) prompt.push(request.ids[i] ?? 0);
    const shift = prompt.length - request.ids.length;
    const blocks = request.blocks.map((b, i) =>
      i < n - 1
        ? (context.blocks[i] ?? b)
        : i === n - 1
          ? {
              start: served.start,
              end: b.end + shift,
              role: b.role,
              // Without its own end-of-turn token the turn is closed by the template's, the first token after it.
              turnEnd: served.turnEnd >= 0 ? served.turnEnd : context.ids.length,
            }
          : {
              start: b.start + shift,
              end: b.end + shift,
              role: b.role,
              turnEnd: b.turnEnd >= 0 ? b.turnEnd + shift : -1,
            },
    );
    const turns = promptTurns(context.turns, request);
    if (turns === null) return fork('template_unrecognised', 'an assistant message cannot be compared');
    return { kind: 'match', prompt, blocks, turns, healedTurns: compared.healed };
  }
  // The same prompt again (a retry, or another sample of the last turn): the engine gets the prompt it had.
  const promptView: ContextView = { ids: segment.prompt, blocks: segment.promptBlocks, turns: segment.turns };
  const m = segment.promptBlocks.length;
  if (request.blocks.length === m) {
    const compared = compareBlocks({ family, context: promptView, request, count: m - 1 });
    if ('kind' in compared) return compared;
    const mine = segment.promptBlocks[m - 1];
    const theirs = request.blocks[m - 1];
    if (
      mine !== undefined &&
      theirs !== undefined &&
      sameRange(range(segment.prompt, mine), range(request.ids, theirs))
    ) {
      return {
        kind: 'match',
        prompt: Array.from(segment.prompt),
        blocks: segment.promptBlocks,
        turns: segment.turns,
        healedTurns: compared.healed,
      };
    }
    return fork('history_edited', 'the generation prompt differs from the last call');
  }
  return fork('history_shorter', `the request has ${request.blocks.length} messages, the segment ${n}`);
}
