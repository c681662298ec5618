// One parser per output format, reading what a model generated the way vLLM's chat route reads it (its `Parser`
// composed from --reasoning-parser and --tool-call-parser): the whole answer into reasoning, content and tool calls,
// and a stream chunk by chunk. docs/parsers.md lists the formats and how each is checked against vLLM itself.
import { randomUUID } from 'node:crypto';
import { isObj } from '../narrow.js';
import type { AnswerDelta } from './think-reasoning-parser.js';

export interface ParsedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface ParsedAnswer {
  readonly reasoning: string | null;
  readonly content: string | null;
  readonly toolCalls: readonly ParsedToolCall[];
}

/** A function the request offers, as far as a parser needs it (argument types come from its JSON schema). */
export interface ToolSchema {
  readonly name: string;
  readonly parameters?: unknown;
}

export interface OutputParserOptions {
  /** The request's tools when it lets the model call them; null: tool calls are cut out of the text, not returned. */
  readonly tools: readonly ToolSchema[] | null;
  /** The model thinks first (the chat template's thinking switch is on). */
  readonly thinking: boolean;
  /**
   * The engine runs the family's reasoning parser (default); false: it was started with the tool parser alone, so
   * think tags are plain text (a format that cannot be read that way ignores this).
   */
  readonly reasoningParser?: boolean;
}

export interface OutputStream {
  /** The delta for one engine chunk; null when the parser holds everything back. */
  next(deltaText: string, deltaIds: readonly number[], finished: boolean): AnswerDelta | null;
  /** Whether a tool call was started: the stream's finish reason becomes `tool_calls`. */
  readonly toolsCalled: boolean;
}

export interface OutputParser {
  parse(text: string): ParsedAnswer;
  stream(): OutputStream;
}

export type OutputParserFactory = (options: OutputParserOptions) => OutputParser;

/** vLLM's default tool-call id: `chatcmpl-tool-` and a random 32-hex uuid. */
export function randomToolCallId(): string {
  return `chatcmpl-tool-${randomUUID().replaceAll('-', '')}`;
}

/** The functions of a chat request's `tools`, or null when it has none. */
export function toolSchemas(tools: unknown): readonly ToolSchema[] | null {
  if (!Array.isArray(tools)) return null;
  const out: ToolSchema[] = [];
  for (const tool of tools) {
    const fn: unknown = isObj(tool) ? tool.function : undefined;
    if (isObj(fn) && typeof fn.name === 'string') out.push({ name: fn.name, parameters: fn.parameters });
  }
  return out.length > 0 ? out : null;
}
