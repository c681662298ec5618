// Qwen3 (and the Qwen2.5 tokenizer it shares): ChatML messages `<|im_start|>role\n...<|im_end|>\n`, reasoning in
// `<think>...</think>` (vLLM `--reasoning-parser qwen3`), tool calls in hermes `<tool_call>` blocks
// (`--tool-call-parser hermes`). The ids are the tokenizer's, the same for every Qwen3 size.
import { composedOutputParser } from './answer-parsing.js';
import type { ChatFamily, PromptBlock } from './chat-family.js';
import { createHermesToolParser } from './parsers/hermes-tool-parser.js';
import type { OutputParser, OutputParserOptions } from './parsers/output-parser.js';
import { createThinkReasoningParser } from './parsers/think-reasoning-parser.js';

const IM_START = 151644;
const IM_END = 151645;
const ASSISTANT = 77091;
const THINK = 151667;
const THINK_END = 151668;

const reasoning = createThinkReasoningParser({ startId: THINK, endId: THINK_END });
const tools = createHermesToolParser();

function splitBlocks(ids: readonly number[]): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  let start = -1;
  let turnEnd = -1;
  const close = (end: number) => {
    if (start >= 0) blocks.push({ start, end, role: ids[start + 1] ?? -1, turnEnd });
  };
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id === IM_START) {
      close(i);
      start = i;
      turnEnd = -1;
    } else if (id === IM_END && start >= 0) {
      turnEnd = i;
    }
  }
  close(ids.length);
  return blocks;
}

export const qwen3Family: ChatFamily = {
  name: 'qwen3',
  endOfTurnId: IM_END,
  assistantRole: ASSISTANT,
  splitBlocks,
  outputParser(options: OutputParserOptions): OutputParser {
    return composedOutputParser({
      reasoning: options.thinking ? reasoning : null,
      tools: options.tools ? tools : null,
    });
  },
};
