// RL benchmark (`npx tsx bench/rl.ts [--rollouts 512] [--turns 8] [--prompt 4096] [--response 64]`):
// batch assembly time and memory for multi-turn rollouts read back from the sqlite store, the binary batch
// size, and the bytes the store spends per token of multi-turn trajectories (every turn's prompt repeats
// the previous turns, so a store without prefix sharing pays for the shared prefix again on every turn).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBatch, type StepRollout } from '../src/algorithms/rl/batch.js';
import { encodeBatch } from '../src/algorithms/rl/batch-codec.js';
import { ATTR_MODEL_VERSION, ATTR_RESPONSE_LOGPROBS } from '../src/contracts/span-attributes.js';
import type { Rollout, SpanInput } from '../src/store/core/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const ROLLOUTS = arg('rollouts', 512);
const TURNS = arg('turns', 8);
const PROMPT = arg('prompt', 4096);
const RESPONSE = arg('response', 64);
const GAP = 16;
const GROUP = 8;
const VOCAB = 151_936;

let seed = 12345;
function rand(): number {
  seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
  return seed / 4_294_967_296;
}
const tokens = (n: number): number[] => Array.from({ length: n }, () => Math.floor(rand() * VOCAB));

function spanFor(options: { rolloutId: string; attemptId: string; seq: number; attributes: SpanInput['attributes'] }) {
  return {
    rollout_id: options.rolloutId,
    attempt_id: options.attemptId,
    sequence_id: options.seq,
    trace_id: 'a'.repeat(32),
    span_id: (options.seq + 1).toString(16).padStart(16, '0'),
    parent_id: null,
    name: 'chat bench',
    status: { status_code: 'OK' as const },
    attributes: options.attributes,
    events: [],
    links: [],
    start_time: 1,
    end_time: 2,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-rl-'));
  const path = join(dir, 'store.db');
  const store = new SqliteStore({ path });
  let storedTokens = 0;
  let jsonBytes = 0;
  const rollouts: StepRollout[] = [];
  const finished = new Map<string, Rollout>();
  const t0 = performance.now();
  for (let r = 0; r < ROLLOUTS; r++) {
    const started = await store.startRollout({ input: { r } });
    const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
    let context = tokens(PROMPT);
    const spans: SpanInput[] = [];
    for (let t = 0; t < TURNS; t++) {
      const prompt = t === 0 ? context : [...context, ...tokens(GAP)];
      const response = tokens(RESPONSE);
      const attributes = {
        prompt_token_ids: prompt,
        response_token_ids: response,
        [ATTR_RESPONSE_LOGPROBS]: response.map(() => -rand() * 3),
        [ATTR_MODEL_VERSION]: 0,
      };
      storedTokens += prompt.length + response.length;
      jsonBytes += JSON.stringify(prompt).length + JSON.stringify(response).length;
      spans.push(spanFor({ ...ids, seq: t + 1, attributes }));
      context = [...prompt, ...response];
    }
    spans.push(
      spanFor({
        ...ids,
        seq: TURNS + 1,
        attributes: {
          'agentlightning.reward.0.name': 'primary',
          'agentlightning.reward.0.value': rand() < 0.5 ? 1 : 0,
        },
      }),
    );
    await store.addManySpans(spans);
    await store.updateAttempt(ids.rolloutId, ids.attemptId, { status: 'succeeded' });
    const rollout = await store.getRolloutById(ids.rolloutId);
    if (rollout) finished.set(ids.rolloutId, rollout);
    rollouts.push({ rolloutId: ids.rolloutId, groupId: `g${Math.floor(r / GROUP)}` });
  }
  const ingestS = (performance.now() - t0) / 1000;
  await store.close();

  const dbBytes = ['', '-wal', '-shm']
    .map((suffix) => {
      try {
        return statSync(path + suffix).size;
      } catch {
        return 0;
      }
    })
    .reduce((a, b) => a + b, 0);

  const reopened = new SqliteStore({ path });
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;
  const t1 = performance.now();
  const batch = await buildBatch({
    store: reopened,
    batchId: 'bench',
    step: 0,
    rollouts,
    finished,
    currentVersion: 0,
    maxStaleness: 0,
    estimator: 'grpo',
    normalizeStd: true,
    level: 'trajectory',
    maxPromptLength: 1_000_000,
    maxResponseLength: 1_000_000,
    rewardFillna: 0,
  });
  const assemblyMs = performance.now() - t1;
  const heapAfter = process.memoryUsage().heapUsed;
  const t2 = performance.now();
  const binary = encodeBatch(batch);
  const encodeMs = performance.now() - t2;
  const t3 = performance.now();
  const jsonLength = JSON.stringify(batch).length;
  const jsonMs = performance.now() - t3;
  const rssAfter = process.memoryUsage().rss;
  await reopened.close();
  rmSync(dir, { recursive: true, force: true });

  const trainTokens = batch.samples.reduce((n, s) => n + s.prompt_ids.length + s.response_ids.length, 0);
  const results = {
    shape: { rollouts: ROLLOUTS, turns: TURNS, prompt_tokens: PROMPT, response_tokens: RESPONSE, gap_tokens: GAP },
    ingest_s: Number(ingestS.toFixed(2)),
    stored_tokens: storedTokens,
    store_bytes: dbBytes,
    store_bytes_per_token: Number((dbBytes / storedTokens).toFixed(3)),
    json_text_bytes_per_token: Number((jsonBytes / storedTokens).toFixed(3)),
    batch: {
      samples: batch.samples.length,
      dropped: batch.stats.dropped,
      tokens: trainTokens,
      assembly_ms: Math.round(assemblyMs),
      heap_delta_mb: Number(((heapAfter - heapBefore) / 2 ** 20).toFixed(1)),
      rss_delta_mb: Number(((rssAfter - rssBefore) / 2 ** 20).toFixed(1)),
      binary_mb: Number((binary.length / 2 ** 20).toFixed(2)),
      binary_encode_ms: Math.round(encodeMs),
      json_mb: Number((jsonLength / 2 ** 20).toFixed(2)),
      json_encode_ms: Math.round(jsonMs),
    },
  };
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

await main();
