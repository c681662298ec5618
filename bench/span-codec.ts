// Span codec micro-benchmark (`npm run bench:span-codec`): CPU per span to encode and decode, and bytes per
// stored token, for the store-scale rollout shape (4 calls, each stored against the previous one, the first
// against a shared dictionary), for a small chat call (an attempt's first, against a dictionary made from another
// small call or from a long rollout's first call) and for the proxy benchmark's small call (the gateway's
// attributes, each call stored against the previous one). Runs in-process, no store: it isolates the codec's own
// cost from SQLite and the event loop (docs/benchmarks.md). Then the SQLite store's CPU per small call at one
// call per commit (encode + commit, as the proxy's small cell at one connection), and the CPU time of the batched
// commits when 32 rollouts record a call in the same turn: what blocks the event loop (CPU time, not wall time, so
// the machine's other load does not count).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  decodeSpan,
  dictionaryOf,
  type SharedDictionary,
  type SpanBase,
  SpanEncoder,
} from '../src/store/codec/span-codec.js';
import type { Span } from '../src/store/core/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';
import { SqliteBackend } from '../src/store/sqlite/sqlite-backend.js';
import { answerAttributes, rolloutCalls } from '../test/helpers/rl-rollout-shape.js';
import { benchSpan } from './store.js';

const ROLLOUTS = Number(process.argv[2] ?? 100);

function asSpan(span: ReturnType<typeof benchSpan>, sequence: number): Span {
  return { ...span, sequence_id: sequence } as Span;
}

/** A small proxied chat call: a short prompt, a short answer with logprobs, two short messages. */
function smallCall(rolloutId: string, seed: number): Span {
  const prompt = Array.from({ length: 40 }, (_, i) => (i * 7919 + seed) % 151_000);
  const response = Array.from({ length: 16 }, (_, i) => (i * 104_729 + seed) % 151_000);
  const logprobs = response.map((_, i) => Math.fround(-((i * 37 + seed) % 100) / 40));
  const tokens = response.map((_, i) => ` w${(i + seed) % 50}`);
  const content = tokens.map((token, i) => ({
    token,
    logprob: logprobs[i],
    bytes: [...Buffer.from(token, 'utf8')],
    top_logprobs: [],
  }));
  return asSpan(
    benchSpan({
      rolloutId,
      attemptId: `${rolloutId}-a`,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'rollgate.request_id': `req-${seed}`,
        'agentlightning.rollout_id': rolloutId,
        'gen_ai.request.model': 'qwen2.5-7b',
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `hi ${seed}` }] }]),
        'gen_ai.provider.name': 'vllm',
        'rollgate.backend': 'http://127.0.0.1:8000/v1',
        'rollgate.token_ids.status': 'ok',
        'gen_ai.response.id': `chatcmpl-${seed}`,
        ...answerAttributes({ prompt, response, logprobs, content, text: tokens.join(''), finishReason: 'stop' }),
      },
    }),
    1,
  );
}

/**
 * A small call as the gateway records it in the proxy benchmark's small cell (every attribute it sets, an 8-id
 * prompt, a 4-token answer), the calls of one attempt each stored against the previous one.
 */
function gatewayCall(options: { rolloutId: string; attemptId: string; seed: number }): Span {
  const { rolloutId, attemptId, seed } = options;
  const prompt = [1_114_113, 104, 101, 108, 108, 111, 1_114_116, 1_114_114];
  const text = `mo${String.fromCharCode(97 + (seed % 26))}k`;
  const response = [...text].map((c) => c.charCodeAt(0));
  const logprobs = response.map((_, i) => Math.fround(-((i * 37 + seed) % 100) / 17));
  const content = [...text].map((token, i) => ({
    token,
    logprob: logprobs[i],
    bytes: [token.charCodeAt(0)],
    top_logprobs: [],
  }));
  const requestId = `${(seed * 2_654_435_761).toString(16).padStart(8, '0')}-9ce1-4560-ac70-${String(seed).padStart(12, '0')}`;
  return asSpan(
    benchSpan({
      rolloutId,
      attemptId,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'rollgate.request_id': requestId,
        'agentlightning.rollout_id': rolloutId,
        'agentlightning.attempt_id': attemptId,
        'gen_ai.conversation.id': rolloutId,
        'session.id': rolloutId,
        'agentlightning.span_sequence_id': seed + 1,
        'gen_ai.request.model': 'mock-model',
        'gen_ai.request.max_tokens': 4,
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'hello' }] }]),
        'rollgate.call.role': 'main',
        'rollgate.call.role_source': 'default',
        'gen_ai.provider.name': 'vllm',
        'server.address': '127.0.0.1',
        'server.port': 34_929,
        'rollgate.backend': 'http://127.0.0.1:34929/v1',
        'rollgate.upstream.url': 'http://127.0.0.1:34929/v1/chat/completions',
        'rollgate.model_version': 0,
        'rollgate.upstream.retry_count': 0,
        'rollgate.routing.decision': 'sticky',
        'rollgate.logprobs.mode': 'raw',
        'rollgate.prefix_cache.strategy': 'salt',
        'rollgate.upstream.status_code': 200,
        'gen_ai.response.time_to_first_chunk': 0.0005 + (seed % 97) / 100_000,
        'rollgate.token_ids.status': 'ok',
        'gen_ai.response.id': `chatcmpl-${requestId}`,
        'gen_ai.response.model': 'mock-model',
        ...answerAttributes({ prompt, response, logprobs, content, text, finishReason: 'length' }),
      },
    }),
    seed + 1,
  );
}

interface Encoded {
  blob: Buffer;
  base: SpanBase | null;
  shared: SharedDictionary | null;
}

/** Rounds per shape: the best one is reported, as the machine's other load only ever adds time. */
const ROUNDS = 5;

function cpuMicros(cpu: NodeJS.CpuUsage): number {
  return cpu.user + cpu.system;
}

function measure(label: string, chains: Span[][], shared: SharedDictionary | null = null): void {
  let best: { encode: number; decode: number; bytes: number; tokens: number } | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    const result = measureOnce(chains, shared);
    if (best === null || result.encode + result.decode < best.encode + best.decode) best = result;
  }
  if (best === null) return;
  const spans = chains.flat().length;
  console.log(
    `${label.padEnd(22)} spans ${String(spans).padStart(5)}  encode ${(best.encode / spans).toFixed(1).padStart(7)} µs/span  ` +
      `decode ${(best.decode / spans).toFixed(1).padStart(7)} µs/span  ${(best.bytes / spans).toFixed(0).padStart(6)} B/span  ` +
      `${(best.bytes / best.tokens).toFixed(3)} B/token`,
  );
}

/** `given`: the shared dictionary first calls get (by default one made from the first of them). */
function measureOnce(
  chains: Span[][],
  given: SharedDictionary | null,
): { encode: number; decode: number; bytes: number; tokens: number } {
  const encoder = new SpanEncoder();
  let shared: SharedDictionary | null = given;
  const encoded: Encoded[] = [];
  const all = chains.flat();
  // Warm-up on the first chains, not counted.
  for (const chain of chains.slice(0, 10)) {
    let base: SpanBase | null = null;
    for (const span of chain) base = encoder.encode(span, { base, shared }).self;
  }
  let tokens = 0;
  let bytes = 0;
  const start = process.cpuUsage();
  for (const chain of chains) {
    let base: SpanBase | null = null;
    for (const span of chain) {
      const result = encoder.encode(span, { base, shared });
      encoded.push({ blob: result.blob, base, shared });
      if (shared === null && base === null) shared = { id: 1, bytes: dictionaryOf(result.self) };
      base = result.self;
    }
  }
  const encodeCpu = process.cpuUsage(start);
  for (const span of all) {
    const prompt = span.attributes.prompt_token_ids;
    const response = span.attributes.response_token_ids;
    tokens += (Array.isArray(prompt) ? prompt.length : 0) + (Array.isArray(response) ? response.length : 0);
  }
  for (const e of encoded) bytes += e.blob.length;
  const decodeStart = process.cpuUsage();
  for (const e of encoded) {
    const { base, shared: dictionary } = e;
    decodeSpan(e.blob, {
      base: () => base ?? undefined,
      shared: (id) => (dictionary !== null && dictionary.id === id ? dictionary.bytes : undefined),
    });
  }
  const decodeCpu = process.cpuUsage(decodeStart);
  return { encode: cpuMicros(encodeCpu), decode: cpuMicros(decodeCpu), bytes, tokens };
}

const rollouts: Span[][] = [];
for (let r = 0; r < ROLLOUTS; r++) {
  const calls = rolloutCalls(`ro-${r}`, `at-${r}`, r + 1);
  rollouts.push(
    calls.map((attributes, i) => asSpan(benchSpan({ rolloutId: `ro-${r}`, attemptId: `at-${r}`, attributes }), i + 1)),
  );
}
const small: Span[][] = [];
for (let r = 0; r < ROLLOUTS * 4; r++) small.push([smallCall(`ro-${r}`, r)]);

const attempt = Array.from({ length: ROLLOUTS * 4 }, (_, seed) =>
  gatewayCall({ rolloutId: 'ro-proxy', attemptId: 'at-proxy', seed }),
);

measure('rl rollout (4 calls)', rollouts);
measure('small chat call', small);
measure('proxy small call', [attempt]);
// A store that also records long rollouts holds a 32 KiB shared dictionary made from one of their first calls.
const first = rollouts[0]?.[0];
if (first !== undefined) {
  const bytes = dictionaryOf(new SpanEncoder().encode(first, { base: null }).self);
  measure('small call, 32K dict', small, { id: 1, bytes });
}

/**
 * The store's CPU per small call as the proxy benchmark's small cell at one connection makes it: one span per
 * call, each its own commit (addSpan resolves once the span is durable), encode and commit together.
 */
async function smallCallCost(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-span-codec-'));
  const store = new SqliteStore({ path: join(dir, 'store.db'), fileCheckIntervalMs: 0 });
  const CALLS = ROLLOUTS * 20;
  let best = Number.POSITIVE_INFINITY;
  try {
    const { rollout_id, attempt } = await store.startRollout({ input: 0 });
    let seed = 0;
    // Built before the clock starts: making the span is the gateway's cost, not the store's.
    const calls = (n: number) =>
      Array.from({ length: n }, () =>
        gatewayCall({ rolloutId: rollout_id, attemptId: attempt.attempt_id, seed: seed++ }),
      );
    for (const span of calls(CALLS / 4)) await store.addSpan(span);
    for (let round = 0; round < ROUNDS; round++) {
      const spans = calls(CALLS);
      const start = process.cpuUsage();
      for (const span of spans) await store.addSpan(span);
      best = Math.min(best, cpuMicros(process.cpuUsage(start)) / CALLS);
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`store, one small call per commit: ${best.toFixed(1)} µs CPU per call (encode + commit)`);
}

await smallCallCost();

const turnCommits: number[] = [];

/** CPU time per batched commit (flushNow) while 32 rollouts record their 4 calls, one call each per turn. */
async function commitCost(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-span-codec-'));
  const store = new SqliteStore({ path: join(dir, 'store.db'), fileCheckIntervalMs: 0 });
  const flush = SqliteBackend.prototype.flushNow;
  const commits: number[] = [];
  SqliteBackend.prototype.flushNow = function (this: SqliteBackend): void {
    const start = process.cpuUsage();
    try {
      flush.call(this);
    } finally {
      commits.push(cpuMicros(process.cpuUsage(start)));
    }
  };
  const IN_FLIGHT = 32;
  try {
    for (let group = 0; group < ROLLOUTS / 10; group++) {
      const rollouts = await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => store.startRollout({ input: i })));
      const calls = rollouts.map(({ rollout_id, attempt }, r) => rolloutCalls(rollout_id, attempt.attempt_id, r + 1));
      for (let turn = 0; turn < 4; turn++) {
        commits.length = 0;
        await Promise.all(
          rollouts.map(({ rollout_id, attempt }, r) =>
            store.addSpan(
              benchSpan({ rolloutId: rollout_id, attemptId: attempt.attempt_id, attributes: calls[r]?.[turn] ?? {} }),
            ),
          ),
        );
        // The commit holding this turn's 32 spans is the costliest flush of the turn.
        turnCommits.push(Math.max(...commits));
      }
    }
  } finally {
    SqliteBackend.prototype.flushNow = flush;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const sorted = [...turnCommits].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  console.log(
    `commit of ${IN_FLIGHT} call spans: median ${(median / 1000).toFixed(1)} ms CPU, ` +
      `max ${((sorted.at(-1) ?? 0) / 1000).toFixed(1)} ms (${sorted.length} commits)`,
  );
}

await commitCost();
