// A tiny real policy behind vLLM's wire format, for the RL "it learns" test.
//
// The policy is a tabular softmax: for each (task, turn) it holds one logit per action token (the letters
// a..p) and samples an action; after an action the <|end|> token follows with probability 1 (logprob 0).
// It is conditioned on the prompt: the task is the first user message, the turn is the number of
// generation headers in the context. Token ids, chat template and detokenisation are mock-vllm's, so the
// next turn's prompt starts with the previous prompt + response, token for token.
//
// Exported API
//   startTinyPolicy(options?): Promise<TinyPolicy>   HTTP server: POST /v1/chat/completions (non-stream),
//       GET /v1/models, GET /health, POST /v1/load_lora_adapter {lora_name, lora_path} (reads a weights
//       JSON file written by the trainer, like vLLM loading a LoRA adapter from a path)
//   nextTokenDistribution(weights, contextIds): the policy itself (what the trainer recomputes)
//   ACTION_IDS, actionState(contextIds), TinyPolicyWeights
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRng } from '../../src/algorithms/rng.js';
import { detokenize, END_TOKEN_ID, type MockChatMessage, renderChatPrompt, tokenize, tokenText } from './mock-vllm.js';

export const ACTIONS = [...'abcdefghijklmnop'];
export const ACTION_IDS: readonly number[] = ACTIONS.map((a) => a.codePointAt(0) ?? 0);
const ASSISTANT_HEADER = '<|assistant|>';

export interface TinyPolicyWeights {
  /** Logits per state key `<task>|<turn>`; a missing key means all zeros (uniform). */
  readonly theta: Record<string, number[]>;
}

export type PolicyState = { readonly kind: 'action'; readonly key: string } | { readonly kind: 'end' };

/** Which decision the next token is, given the full context (prompt + tokens generated so far). */
export function actionState(contextIds: readonly number[]): PolicyState {
  const last = contextIds[contextIds.length - 1];
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
  if (state.kind === 'end') return { ids: [END_TOKEN_ID], logprobs: [0] };
  const logits = weights.theta[state.key] ?? ACTION_IDS.map(() => 0);
  return { ids: ACTION_IDS, logprobs: logSoftmax(logits) };
}

export interface TinyPolicyOptions {
  readonly model?: string;
  readonly seed?: number;
  readonly weights?: TinyPolicyWeights;
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

  const sample = (logprobs: readonly number[]): number => {
    let u = random();
    for (let i = 0; i < logprobs.length; i++) {
      u -= Math.exp(logprobs[i] ?? Number.NEGATIVE_INFINITY);
      if (u <= 0) return i;
    }
    return logprobs.length - 1;
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
    const promptIds = tokenize(renderChatPrompt(body.messages as MockChatMessage[]));
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 16;
    const context = [...promptIds];
    const generated: number[] = [];
    const logprobs: number[] = [];
    while (generated.length < maxTokens) {
      const dist = nextTokenDistribution(weights, context);
      const k = sample(dist.logprobs);
      const id = dist.ids[k] ?? END_TOKEN_ID;
      generated.push(id);
      logprobs.push(dist.logprobs[k] ?? 0);
      context.push(id);
      if (id === END_TOKEN_ID) break;
    }
    completions += 1;
    const stopped = generated[generated.length - 1] === END_TOKEN_ID;
    const content = detokenize(stopped ? generated.slice(0, -1) : generated);
    const choice: Record<string, unknown> = {
      index: 0,
      message: { role: 'assistant', content },
      finish_reason: stopped ? 'stop' : 'length',
      stop_reason: null,
    };
    if (body.logprobs === true) {
      choice.logprobs = {
        content: generated.map((id, i) => ({
          token: tokenText(id),
          logprob: logprobs[i],
          bytes: [...Buffer.from(tokenText(id), 'utf8')],
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
