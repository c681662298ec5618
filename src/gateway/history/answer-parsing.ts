// What vLLM's chat route makes of generated text, composed from a family's reasoning and tool parsers: the whole
// message of a non-stream answer, and the delta of each stream chunk. The gateway applies it to a token-in
// generation so the agent gets the chat answer the engine would have given for the same tokens.
import type { ToolParser, ToolStreamer } from './parsers/hermes-tool-parser.js';
import type { OutputParser, ParsedAnswer, ParsedToolCall } from './parsers/output-parser.js';
import type { AnswerDelta, ReasoningParser } from './parsers/think-reasoning-parser.js';

export type { ParsedAnswer } from './parsers/output-parser.js';

export interface AnswerParsing {
  /** Null when the engine parses no reasoning (or the prompt already closed the think block). */
  readonly reasoning: ReasoningParser | null;
  /** Null when the request has no tools (or `tool_choice: "none"`). */
  readonly tools: ToolParser | null;
}

/** The non-stream answer: reasoning split off first, then tool calls taken out of the content. */
export function parseAnswer(text: string, parsing: AnswerParsing): ParsedAnswer {
  let reasoning: string | null = null;
  let content: string | null = text;
  if (parsing.reasoning !== null) ({ reasoning, content } = parsing.reasoning.extract(text));
  let toolCalls: readonly ParsedToolCall[] = [];
  if (parsing.tools !== null && content !== null) {
    const parsed = parsing.tools.extract(content);
    if (parsed !== null) ({ toolCalls, content } = parsed);
  }
  return { reasoning, content, toolCalls };
}

/**
 * One choice's stream, chunk by chunk, the way vLLM's chat stream generator feeds its parsers: while reasoning
 * runs, the reasoning parser sees the chunks; from the chunk that ends it, the tool parser sees only the content
 * (its text restarts there). A chunk whose tokens a parser holds back yields null.
 */
export class AnswerDeltas {
  readonly #parsing: AnswerParsing;
  readonly #streamer: ToolStreamer | null;
  #previousText = '';
  #previousIds: number[] = [];
  #reasoningEnded: boolean;
  #first = true;

  constructor(parsing: AnswerParsing) {
    this.#parsing = parsing;
    this.#reasoningEnded = parsing.reasoning === null;
    this.#streamer = parsing.tools === null ? null : parsing.tools.streamer();
  }

  get toolsCalled(): boolean {
    return this.#streamer?.called ?? false;
  }

  next(deltaText: string, deltaIds: readonly number[]): AnswerDelta | null {
    const reasoning = this.#parsing.reasoning;
    // An answer that does not open with <think> has no reasoning: the model answered without thinking.
    if (this.#first && reasoning !== null && deltaIds.length > 0 && deltaIds[0] !== reasoning.startId) {
      this.#reasoningEnded = true;
    }
    this.#first = false;
    const streamer = this.#streamer;
    let currentText = this.#previousText + deltaText;
    let currentIds = [...this.#previousIds, ...deltaIds];
    let delta: AnswerDelta | null;
    if (reasoning !== null && !this.#reasoningEnded) {
      delta = reasoning.stream({ previousIds: this.#previousIds, deltaIds, deltaText });
      if (streamer !== null && reasoning.isEnd(deltaIds)) {
        this.#reasoningEnded = true;
        currentIds = reasoning.contentIds(deltaIds);
        if (delta?.content) {
          currentText = delta.content;
          delta.content = undefined;
        } else {
          currentText = '';
        }
      }
      // Without tools, vLLM keeps asking the reasoning parser, which passes content through after </think>.
      if (streamer !== null && this.#reasoningEnded) delta = streamer.next(currentText);
    } else if (streamer !== null) {
      delta = streamer.next(currentText);
    } else {
      delta = deltaText === '' ? null : { content: deltaText };
    }
    this.#previousText = currentText;
    this.#previousIds = currentIds;
    return delta;
  }
}

/** A reasoning parser and a tool parser composed into one output parser (vLLM's legacy parser pair). */
export function composedOutputParser(parsing: AnswerParsing): OutputParser {
  return {
    parse: (text) => parseAnswer(text, parsing),
    stream() {
      const deltas = new AnswerDeltas(parsing);
      return {
        next: (deltaText, deltaIds) => deltas.next(deltaText, deltaIds),
        get toolsCalled() {
          return deltas.toolsCalled;
        },
      };
    },
  };
}
