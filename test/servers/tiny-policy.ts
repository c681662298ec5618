// A tiny real policy behind vLLM's wire format, for the RL "it learns" test.
//
// The policy is a tabular softmax: for each (task, turn) it holds one logit per action token (the letters
// a..p) and samples an action; after an action the <|end|> token follows with probability 1 (logprob 0).
// It is conditioned on the prompt: the task is the first user message, the turn is the number of
// generation headers in the context. Token ids, chat template and detokenisation are mock-vllm's, so the
// next turn's prompt starts with the previous prompt + response, token for token.
//
// Two tokenizers, as the engine twin has them (option `tokenizer`): `chars` (default: mock-vllm's code-point ids
// and prefix-stable template) and `qwen3` (the real Qwen3 tokenizer and chat template: the actions are the Qwen3
// ids of the letters, <|im_end|> ends a turn). A context in the Qwen3 vocabulary is recognised by its
// <|im_start|> token, so the trainer's recomputation needs no option.
//
// Exported API
//   startTinyPolicy(options?): Promise<TinyPolicy>   HTTP server: POST /v1/chat/completions (non-stream),
//       POST /v1/completions with token-id prompts (non-stream), POST /tokenize (messages -> the template's ids),
//       GET /v1/models, GET /health, POST /v1/load_lora_adapter {lora_name, lora_path} (reads a weights
//       JSON file written by the trainer, like vLLM loading a LoRA adapter from a path)
//   nextTokenDistribution(weights, contextIds): the policy itself (what the trainer recomputes)
//   ACTION_IDS, actionState(contextIds), TinyPolicyWeights
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRng } from '../../src/algorithms/rng.js';
import {
  detokenize,
  END_TOKEN_ID,
  type MockChatMessage,
  qwen3Tokenizer,
  renderChatPrompt,
  tokenize,
  tokenText,
} from './mock-vllm.js';
import { qwen3Template } from './twin/chat-template.js';

export const ACTIONS = [...'abcdefghijklmnop'];
export const ACTION_IDS: readonly number[] = ACTIONS.map((a) => a.codePointAt(0) ?? 0);
const ASSISTANT_HEADER = '<|assistant|>';

export type TinyPolicyTokenizer = 'chars' | 'qwen3';

const QWEN3_IM_START = 151_644;
const QWEN3_IM_END = 151_645;
const QWEN3_ASSISTANT_HEADER = '<|im_start|>assistant';
let qwen3ActionIds: readonly number[] | undefined;

/** The Qwen3 ids of the action letters (each letter is one token), looked up once. */
function qwen3Actions(): readonly number[] {
  qwen3ActionIds ??= ACTIONS.map((a) => {
    const id = qwen3Tokenizer().idOf(a);
    if (id === undefined) throw new Error(`action ${a} is not one Qwen3 token`);
    return id;
  });
  return qwen3ActionIds;
}

function isQwen3Context(contextIds: readonly number[]): boolean {
  return contextIds.includes(QWEN3_IM_START);
}

/** What one tokenizer mode needs: the action and end ids, rendering, encoding and decoding. */
interface Vocabulary {
  readonly actionIds: readonly number[];
  readonly endId: number;
  render(messages: readonly MockChatMessage[], tools: readonly unknown[] | undefined): number[];
  /** Text as vLLM returns it (special tokens skipped). */
  text(ids: readonly number[]): string;
  tokenText(id: number): string;
}

const CHARS: Vocabulary = {
  actionIds: ACTION_IDS,
  endId: END_TOKEN_ID,
  render: (messages) => tokenize(renderChatPrompt(messages as MockChatMessage[])),
  text: (ids) => detokenize(ids.filter((id) => id !== END_TOKEN_ID)),
  tokenText,
};

function qwen3Vocabulary(): Vocabulary {
  const tokenizer = qwen3Tokenizer();
  return {
    actionIds: qwen3Actions(),
    endId: QWEN3_IM_END,
    render: (messages, tools) =>
      tokenizer.encode(qwen3Template.render({ messages, ...(tools ? { tools } : {}), addGenerationPrompt: true })),
    text: (ids) => tokenizer.decode(ids, { skipSpecial: true }),
    tokenText: (id) => tokenizer.tokenText(id),
  };
}

export interface TinyPolicyWeights {
  /** Logits per state key `<task>|<turn>`; a missing key means all zeros (uniform). */
  readonly theta: Record<string, number[]>;
}

export type PolicyState = { readonly kind: 'action'; readonly key: string } | { readonly kind: 'end' };

/** Which decision the next token is, given the full context (prompt + tokens generated so far). */
export function actionState(contextIds: readonly number[]): PolicyState {
  const last = contextIds[contextIds.length - 1];
  if (isQwen3Context(contextIds)) {
    if (last !== undefined && qwen3Actions().includes(last)) return { kind: 'end' };
    const text = qwen3Tokenizer().decode(contextIds);
    const task = /<\|im_start\|>user\n(.*?)<\|im_end\|>/s.exec(text)?.[1] ?? '';
    return { kind: 'action', key: `${task}|${text.split(QWEN3_ASSISTANT_HEADER).length - 2}` };
  }
  if (last !== undefined && ACTION_IDS.includes(last)) return { kind: 'end' };
  const text = detokenize(contextIds);
  const task = /^(?:<\|system\|>.*?<\|end\|>)?<\|user\|>(.*?)<\|end\|>/s.exec(text)?.[1] ?? '';
  const turn = text.split(ASSISTANT_HEADER).length - 2;
  return { kind: 'action', key: `${task}|${turn}` };
}

export function logSoftmax(logits: readonly number[]): number[] {
  const max = Math.max(...logits);
  let sum = 0;
  for (const l of logits) sum += Math.exp(l - max);
  const logZ = max + Math.log(sum);
  return logits.map((l) => l - logZ);
}

/** Candidate next tokens and their logprobs under `weights`. */
export function nextTokenDistribution(
  weights: TinyPolicyWeights,
  contextIds: readonly number[],
): { ids: readonly number[]; logprobs: number[] } {
  const state = actionState(contextIds);
  const qwen3 = isQwen3Context(contextIds);
  if (state.kind === 'end') return { ids: [qwen3 ? QWEN3_IM_END : END_TOKEN_ID], logprobs: [0] };
  const logits = weights.theta[state.key] ?? ACTION_IDS.map(() => 0);
  return { ids: qwen3 ? qwen3Actions() : ACTION_IDS, logprobs: logSoftmax(logits) };
}

export interface TinyPolicyOptions {
  readonly model?: string;
  readonly seed?: number;
  readonly weights?: TinyPolicyWeights;
  /** `qwen3`: the real Qwen3 tokenizer and chat template (default `chars`, mock-vllm's). */
  readonly tokenizer?: TinyPolicyTokenizer;
}

export interface TinyPolicy {
  /** Base URL ending in /v1. */
  readonly url: string;
  readonly model: string;
  weights(): TinyPolicyWeights;
  /** Adapter loads so far (name and path), in order. */
  readonly loads: Array<{ lora_name: string; lora_path: string }>;
  readonly completions: () => number;
  close(): Promise<void>;
}

/** What /tokenize reports as the context length (faithful history sizes max_tokens from it). */
const MAX_MODEL_LEN = 4096;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isWeights(value: unknown): value is TinyPolicyWeights {
  if (!isRecord(value) || !isRecord(value.theta)) return false;
  return Object.values(value.theta).every(
    (row) => Array.isArray(row) && row.length === ACTION_IDS.length && row.every((x) => typeof x === 'number'),
  );
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

function vllmError(res: ServerResponse, status: number, message: string): void {
  send(res, status, { object: 'error', message, type: 'BadRequestError', param: null, code: status });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

export async function startTinyPolicy(options: TinyPolicyOptions = {}): Promise<TinyPolicy> {
  const model = options.model ?? 'tiny-policy';
  const random = createRng(options.seed ?? 1).next;
  let weights: TinyPolicyWeights = options.weights ?? { theta: {} };
  const loads: Array<{ lora_name: string; lora_path: string }> = [];
  let completions = 0;
  const vocab = options.tokenizer === 'qwen3' ? qwen3Vocabulary() : CHARS;

  const sample = (logprobs: readonly number[]): number => {
    let u = random();
    for (let i = 0; i < logprobs.length; i++) {
      u -= Math.exp(logprobs[i] ?? Number.NEGATIVE_INFINITY);
      if (u <= 0) return i;
    }
    return logprobs.length - 1;
  };

  /** Samples from the policy until the end token or max_tokens. */
  const generate = (promptIds: readonly number[], body: Record<string, unknown>) => {
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 16;
    const context = [...promptIds];
    const generated: number[] = [];
    const logprobs: number[] = [];
    while (generated.length < maxTokens) {
      const dist = nextTokenDistribution(weights, context);
      const k = sample(dist.logprobs);
      const id = dist.ids[k] ?? vocab.endId;
      generated.push(id);
      logprobs.push(dist.logprobs[k] ?? 0);
      context.push(id);
      if (id === vocab.endId) break;
    }
    completions += 1;
    return { generated, logprobs, stopped: generated[generated.length - 1] === vocab.endId };
  };

  const chat = (body: Record<string, unknown>, res: ServerResponse): void => {
    if (body.stream === true) {
      vllmError(res, 400, 'tiny policy serves non-streaming requests only');
      return;
    }
    if (!Array.isArray(body.messages)) {
      vllmError(res, 400, 'messages is required');
      return;
    }
    const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : undefined;
    const promptIds = vocab.render(body.messages as MockChatMessage[], tools);
    const { generated, logprobs, stopped } = generate(promptIds, body);
    const content = vocab.text(generated);
    const choice: Record<string, unknown> = {
      index: 0,
      message: { role: 'assistant', content },
      finish_reason: stopped ? 'stop' : 'length',
      stop_reason: null,
    };
    if (body.logprobs === true) {
      choice.logprobs = {
        content: generated.map((id, i) => ({
          token: vocab.tokenText(id),
          logprob: logprobs[i],
          bytes: [...Buffer.from(vocab.tokenText(id), 'utf8')],
          top_logprobs: [],
        })),
      };
    }
    const returnIds = body.return_token_ids === true;
    if (returnIds) choice.token_ids = generated;
    send(res, 200, {
      id: `chatcmpl-${completions}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [choice],
      ...(returnIds ? { prompt_token_ids: promptIds } : {}),
      usage: {
        prompt_tokens: promptIds.length,
        completion_tokens: generated.length,
        total_tokens: promptIds.length + generated.length,
      },
    });
  };

  /** vLLM's /v1/completions with a token-id prompt (what faithful history sends), non-stream. */
  const complete = (body: Record<string, unknown>, res: ServerResponse): void => {
    const prompt = body.prompt;
    if (body.stream === true) {
      vllmError(res, 400, 'tiny policy serves non-streaming requests only');
      return;
    }
    if (!Array.isArray(prompt) || !prompt.every((id) => Number.isInteger(id))) {
      vllmError(res, 400, 'tiny policy completes token-id prompts only');
      return;
    }
    const promptIds = prompt as number[];
    const { generated, logprobs, stopped } = generate(promptIds, body);
    const tokens = generated.map((id) => vocab.tokenText(id));
    const offsets: number[] = [];
    let offset = 0;
    for (const token of tokens) {
      offsets.push(offset);
      offset += token.length;
    }
    const returnIds = body.return_token_ids === true;
    send(res, 200, {
      id: `cmpl-${completions}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          text: vocab.text(generated),
          // vLLM: `logprobs: k` asks for the sampled token's logprob plus k alternatives (none here).
          logprobs:
            typeof body.logprobs === 'number'
              ? { tokens, token_logprobs: logprobs, top_logprobs: tokens.map(() => ({})), text_offset: offsets }
              : null,
          finish_reason: stopped ? 'stop' : 'length',
          stop_reason: null,
          ...(returnIds ? { token_ids: generated, prompt_token_ids: promptIds } : {}),
        },
      ],
      usage: {
        prompt_tokens: promptIds.length,
        completion_tokens: generated.length,
        total_tokens: promptIds.length + generated.length,
      },
    });
  };

  /** vLLM's POST /tokenize for chat messages: the template's prompt ids. */
  const tokenizeRoute = (body: Record<string, unknown>, res: ServerResponse): void => {
    if (!Array.isArray(body.messages)) {
      vllmError(res, 400, 'messages is required');
      return;
    }
    const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : undefined;
    const tokens = vocab.render(body.messages as MockChatMessage[], tools);
    send(res, 200, { count: tokens.length, max_model_len: MAX_MODEL_LEN, tokens, token_strs: null });
  };

  const loadAdapter = async (body: Record<string, unknown>, res: ServerResponse): Promise<void> => {
    const name = body.lora_name;
    const path = body.lora_path;
    if (typeof name !== 'string' || typeof path !== 'string') {
      return vllmError(res, 400, 'lora_name and lora_path are required');
    }
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    if (!isWeights(parsed)) return vllmError(res, 400, `${path} holds no tiny-policy weights`);
    weights = parsed;
    loads.push({ lora_name: name, lora_path: path });
    send(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
  };

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const route = async () => {
      if (req.method === 'GET' && url === '/health') return send(res, 200, '');
      if (req.method === 'GET' && url === '/v1/models') {
        return send(res, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'rollgate-test' }] });
      }
      if (req.method !== 'POST') return vllmError(res, 404, 'Not Found');
      const body = await readJson(req);
      if (!isRecord(body)) return vllmError(res, 400, 'body must be a JSON object');
      if (url === '/v1/chat/completions') return chat(body, res);
      if (url === '/v1/completions') return complete(body, res);
      if (url === '/tokenize') return tokenizeRoute(body, res);
      if (url === '/v1/load_lora_adapter') return loadAdapter(body, res);
      return vllmError(res, 404, 'Not Found');
    };
    route().catch((error: unknown) => vllmError(res, 400, error instanceof Error ? error.message : String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    model,
    weights: () => weights,
    loads,
    completions: () => completions,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
