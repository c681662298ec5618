// The parser corpus and vLLM's answers to it (test/fixtures/parser-corpus, written by
// test/real-engines/parsers/run_vllm_parsers.py), and the gateway's parser for each family in it, replayed the way
// vLLM was: the whole text, and every recorded stream chunk by chunk.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDeepSeekV31Parser } from '../../../../src/gateway/history/parsers/deepseek-v31-parser.js';
import { createGlm47Parser } from '../../../../src/gateway/history/parsers/glm47-parser.js';
import { createHarmonyParser } from '../../../../src/gateway/history/parsers/harmony-parser.js';
import { createKimiK2Parser } from '../../../../src/gateway/history/parsers/kimi-k2-parser.js';
import { createMiniMaxM2Parser } from '../../../../src/gateway/history/parsers/minimax-m2-parser.js';
import type {
  OutputParserFactory,
  OutputParserOptions,
  ToolSchema,
} from '../../../../src/gateway/history/parsers/output-parser.js';
import { createQwen3CoderParser } from '../../../../src/gateway/history/parsers/qwen3-coder-parser.js';
import { qwen3Family } from '../../../../src/gateway/history/qwen3-family.js';

const DIR = join(import.meta.dirname, '../../../fixtures/parser-corpus');

export interface Message {
  readonly reasoning: string | null;
  readonly content: string | null;
  readonly tool_calls: readonly { id: string | null; name: string; arguments: string }[];
}

export interface Options {
  readonly tools: boolean;
  readonly thinking: boolean;
  /** False: vLLM ran the family's tool parser alone. */
  readonly reasoning_parser?: boolean;
}

export interface Stream {
  readonly tokens_per_chunk: number;
  readonly chunks: readonly { text: string; ids: number[] }[];
  readonly message: Message;
}

export interface Entry {
  readonly options: Options;
  readonly text: string;
  readonly whole: Message;
  readonly streams: readonly Stream[];
}

interface Expected {
  readonly vllm: string;
  readonly families: Record<string, { cases: Record<string, Entry[]> }>;
}

interface Corpus {
  readonly tools: readonly { function: { name: string; parameters?: unknown } }[];
}

export const expected: Expected = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));
const corpus: Corpus = JSON.parse(readFileSync(join(DIR, 'corpus.json'), 'utf8'));
export const TOOLS: readonly ToolSchema[] = corpus.tools.map((t) => t.function);

/** The gateway's parser for each family of the corpus. */
export const PARSERS: Readonly<Record<string, OutputParserFactory>> = {
  qwen3: (options) => qwen3Family.outputParser(options),
  qwen3_coder: createQwen3CoderParser,
  glm47: createGlm47Parser,
  deepseek_v31: createDeepSeekV31Parser,
  kimi_k2: createKimiK2Parser,
  minimax_m2: createMiniMaxM2Parser,
  harmony: createHarmonyParser,
};

/** Random tool-call ids compare equal; a family's own ids are compared. */
function callId(id: string | null | undefined): string | null {
  if (id === null || id === undefined) return null;
  return id.startsWith('chatcmpl-tool-') ? 'RANDOM' : id;
}

function parserOptions(options: Options): OutputParserOptions {
  return {
    tools: options.tools ? TOOLS : null,
    thinking: options.thinking,
    reasoningParser: options.reasoning_parser !== false,
  };
}

export function parseWhole(factory: OutputParserFactory, entry: Entry): Message {
  const parser = factory(parserOptions(entry.options));
  const answer = parser.parse(entry.text);
  return {
    reasoning: answer.reasoning,
    content: answer.content,
    tool_calls: answer.toolCalls.map((c) => ({ id: callId(c.id), name: c.name, arguments: c.arguments })),
  };
}

/** The message a client assembles from the stream: text joined, calls joined by index. */
export function parseStream(factory: OutputParserFactory, entry: Entry, stream: Stream): Message {
  const parser = factory(parserOptions(entry.options));
  const s = parser.stream();
  let reasoning: string | null = null;
  let content: string | null = null;
  const calls = new Map<number, { id: string | null; name: string; arguments: string }>();
  stream.chunks.forEach((chunk, i) => {
    const delta = s.next(chunk.text, chunk.ids, i === stream.chunks.length - 1);
    if (delta === null) return;
    if (delta.reasoning) reasoning = (reasoning ?? '') + delta.reasoning;
    if (delta.content) content = (content ?? '') + delta.content;
    for (const tc of delta.tool_calls ?? []) {
      const index = Number(tc.index);
      const call = calls.get(index) ?? { id: null, name: '', arguments: '' };
      const fn = (tc.function ?? {}) as { name?: string; arguments?: string };
      call.id = call.id ?? callId(typeof tc.id === 'string' ? tc.id : null);
      call.name += fn.name ?? '';
      call.arguments += fn.arguments ?? '';
      calls.set(index, call);
    }
  });
  return { reasoning, content, tool_calls: [...calls.keys()].sort((a, b) => a - b).map((k) => calls.get(k)!) };
}

export function optionsTag(options: Options): string {
  const tag = `${options.tools ? 'tools' : 'no tools'}, thinking ${options.thinking ? 'on' : 'off'}`;
  return options.reasoning_parser === false ? `${tag}, no reasoning parser` : tag;
}
