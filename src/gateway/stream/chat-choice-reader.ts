// What a translation of a chat completions stream into another API (Anthropic Messages, OpenAI Responses) reads
// from each chunk: the first choice's reasoning, text and tool-call deltas and its finish, and, for the closing
// event, the latest usage and the count of generated token ids. Both APIs have one answer per call, so only the
// first choice is read (the Messages request refuses n > 1; Responses has no `n`). It also says when the opening
// events are due (with the first chunk, or at the end of a stream that had none). The translator turns each piece
// into its own events; this file only says, once, how a chunk is taken apart.

import { FINISH_REASON_VALUE_ABORT } from '../../contracts/span-attributes.js';
import { isObj, type Obj } from '../history/narrow.js';

/** The engine ended the generation before the model did (a pause or weight update aborted it): not an answer. */
export const FINISH_REASON_ABORT = FINISH_REASON_VALUE_ABORT;

/** What the agent is told of an aborted generation, in either API: send the same request again. */
export const ABORTED_MESSAGE =
  'The engine aborted the generation before it finished (a pause or weight update); send the request again';
function nonEmpty(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** vLLM's reasoning field (`reasoning`; `reasoning_content` in older builds, some send both with the same text). */
export function reasoningOf(message: Obj): string | null {
  const reasoning = message.reasoning ?? message.reasoning_content;
  return typeof reasoning === 'string' ? reasoning : null;
}

/** One streamed tool-call delta: the call it belongs to, its id and name (first delta only), an argument fragment. */
export interface ToolCallDelta {
  readonly toolIndex: number;
  readonly id: string;
  readonly name: string;
  readonly fragment: string | null;
}

/** The translator's events for each piece of the first choice, in the order the chunk carries them. */
export interface ChoiceDeltaVisitor {
  /** The opening events, before anything of the first chunk (or of none, for a stream that ends before one). */
  start(firstChunk: Obj): string;
  /** A reasoning delta (vLLM's parsed reasoning) or a content delta. */
  text(kind: 'reasoning' | 'content', text: string): string;
  toolCall(call: ToolCallDelta): string;
  /** The choice finished; finishReason and engineStopReason are set. */
  finish(): string;
}

export class FirstChoiceReader {
  readonly #visitor: ChoiceDeltaVisitor;
  #started = false;
  #usage: unknown = null;
  #outputTokens = 0;
  #finishReason: unknown = null;
  #engineStopReason: unknown = null;

  constructor(visitor: ChoiceDeltaVisitor) {
    this.#visitor = visitor;
  }

  /** The latest chunk's usage object (the engine sends it in the last chunk when asked), or null. */
  get usage(): unknown {
    return this.#usage;
  }

  /** Generated token ids seen so far (the usage fallback when the engine sent no usage). */
  get outputTokens(): number {
    return this.#outputTokens;
  }

  get finishReason(): unknown {
    return this.#finishReason;
  }

  /** The engine's `stop_reason` (the stop string or token id that ended the choice), as the finish chunk gave it. */
  get engineStopReason(): unknown {
    return this.#engineStopReason;
  }

  /** The opening events if they have not gone out yet (a stream that ends or fails before its first chunk). */
  ensureStarted(): string {
    return this.#started ? '' : this.#start({});
  }

  #start(chunk: Obj): string {
    this.#started = true;
    return this.#visitor.start(chunk);
  }

  /** The visitor's events for one chat chunk (often one, possibly none). */
  read(chunk: Obj): string {
    const visitor = this.#visitor;
    let out = this.#started ? '' : this.#start(chunk);
    if (isObj(chunk.usage)) this.#usage = chunk.usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (!isObj(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      if (Array.isArray(choice.token_ids)) this.#outputTokens += choice.token_ids.length;
      const delta = isObj(choice.delta) ? choice.delta : {};
      const reasoning = nonEmpty(reasoningOf(delta));
      if (reasoning !== null) out += visitor.text('reasoning', reasoning);
      const text = nonEmpty(delta.content);
      if (text !== null) out += visitor.text('content', text);
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls) {
          if (!isObj(call)) continue;
          const fn = isObj(call.function) ? call.function : {};
          out += visitor.toolCall({
            toolIndex: typeof call.index === 'number' ? call.index : 0,
            id: typeof call.id === 'string' ? call.id : '',
            name: typeof fn.name === 'string' ? fn.name : '',
            fragment: nonEmpty(fn.arguments),
          });
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.#finishReason = choice.finish_reason;
        this.#engineStopReason = choice.stop_reason;
        out += visitor.finish();
      }
    }
    return out;
  }
}
