// Reading a rendered Qwen3 chat prompt back: what a model generating from token ids sees. Under faithful history
// the gateway sends the engine only ids (a token-in completion), so the agent policy recovers the conversation
// state from the prompt text the way the model would: the tools from the template's `<tools>` block (one
// `tojson` line per tool), the tool results from the `<tool_response>` blocks of user turns, and whether the generation prompt already closed thinking
// (`enable_thinking: false` renders an empty think block after `<|im_start|>assistant\n`).
import { isRecord } from './util.js';

/** The Qwen3 template's fixed text around the offered tools. */
const TOOLS_OPEN = 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n';
const TOOLS_CLOSE = '\n</tools>\n\nFor each function call';
const TURN_START = '<|im_start|>';
const TURN_END = '<|im_end|>';
const GENERATION_PROMPT = `${TURN_START}assistant\n`;
const THINKING_CLOSED = '<think>\n\n</think>\n\n';
/** A tool message's block: at the start of a user turn, or right after the previous tool message's block. */
const TOOL_RESPONSE = /(?:^|<\/tool_response>\n)<tool_response>\n/g;

export interface Qwen3PromptState {
  /** The offered tools in the chat shape `{type: "function", function: {name, description, parameters}}`. */
  readonly tools: unknown[];
  /** How many tool results the conversation holds. */
  readonly toolResults: number;
  /** The generation prompt closed thinking already (`enable_thinking: false`). */
  readonly thinkingClosed: boolean;
}

function offeredTools(text: string): unknown[] {
  const open = text.indexOf(TOOLS_OPEN);
  if (open < 0) return [];
  const start = open + TOOLS_OPEN.length;
  const end = text.indexOf(TOOLS_CLOSE, start);
  if (end < 0) return [];
  const tools: unknown[] = [];
  for (const line of text.slice(start, end).split('\n')) {
    try {
      const tool: unknown = JSON.parse(line);
      if (isRecord(tool) && isRecord(tool.function)) tools.push(tool);
    } catch {
      // Not a tool line (a tool's JSON never spans lines: tojson escapes newlines).
    }
  }
  return tools;
}

/**
 * The state of a prompt that asks the assistant for its next turn, or null when `text` is not such a Qwen3 chat
 * prompt (a plain completion, another template).
 */
export function readQwen3Prompt(text: string): Qwen3PromptState | null {
  const thinkingClosed = text.endsWith(GENERATION_PROMPT + THINKING_CLOSED);
  if (!thinkingClosed && !text.endsWith(GENERATION_PROMPT)) return null;
  let toolResults = 0;
  for (const turn of text.split(TURN_START).slice(1)) {
    const newline = turn.indexOf('\n');
    const role = newline < 0 ? turn : turn.slice(0, newline);
    if (role !== 'user') continue;
    const end = turn.lastIndexOf(TURN_END);
    const content = turn.slice(newline + 1, end < 0 ? undefined : end);
    toolResults += content.match(TOOL_RESPONSE)?.length ?? 0;
  }
  return { tools: offeredTools(text), toolResults, thinkingClosed };
}
