// What faithful history needs to know about a model's chat template and output format, behind one small
// interface. The template itself stays the engine's (every prompt is rendered by the engine's own /tokenize); a
// family only knows how the rendered ids divide into messages and how the engine's parsers read an answer, so the
// gateway can splice served ids into the history and still answer the agent like the chat route.
// The families themselves (qwen3-family.ts) implement it; family.ts picks one by its config name.
import type { OutputParser, OutputParserOptions } from './parsers/output-parser.js';

/** One message of a rendered prompt: [start, end) in the ids. */
export interface PromptBlock {
  readonly start: number;
  readonly end: number;
  /** The role token (the template writes one per message). */
  readonly role: number;
  /** Index of the block's last end-of-turn token, or -1 (an open generation prompt). */
  readonly turnEnd: number;
}

export interface ChatFamily {
  readonly name: string;
  /** The token that closes a message in the template; the engine's EOS for the assistant's turn. */
  readonly endOfTurnId: number;
  /** The role token of assistant messages. */
  readonly assistantRole: number;
  /** The messages of a rendered prompt, in order; tokens before the first message are not a block. */
  splitBlocks(ids: readonly number[]): PromptBlock[];
  /**
   * The engine's output parser for one request: `tools` are the request's when it lets the model call them
   * (`tool_choice` absent or `auto`); `thinking` is false when the prompt closed the think block itself
   * (`chat_template_kwargs.enable_thinking: false`).
   */
  outputParser(options: OutputParserOptions): OutputParser;
}
