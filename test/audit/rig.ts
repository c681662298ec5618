// The data audit's rig: a real gateway in front of four qwen3-mode engine twins, agents on the official openai SDK,
// and one `audit()` that turns the recorded rollouts into every kind of training data rollgate emits (an RL batch,
// `rollgate export` rows at each level, triplets) and checks all of it, and /metrics, against the twins' ledgers.
//
// Pools (agents send the pool name as `model`):
//   policy         main twin, LoRA adapter `policy` (version N = adapter version N), processed logprobs, salt
//   policy-nosalt  the same adapter with prefixCache off: the negative control for stale KV
//   slow-policy    slow twin (4 ms per token, long answers, paced non-stream): for acting mid-generation
//   raw-policy     raw-logprobs twin (vLLM's default mode), base weights (version 0)
//   floor-policy   a twin whose every 5th step has no logprob entry (-9999 in chat, null in completions)
import OpenAI from 'openai';
import { spansToTriplets } from '../../src/adapters/triplets.js';
import { type Batch, buildBatch } from '../../src/algorithms/rl/batch.js';
import { type ExportLevel, exportRows } from '../../src/commands/export.js';
import { attemptBaseUrl, attemptRewardUrl } from '../../src/runner/attempt-urls.js';
import { postReward } from '../../src/runner/reward-client.js';
import type { Rollout, Span } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockRespond, type MockVllm, startEngineTwin, type TwinWeights } from '../servers/mock-vllm.js';
import {
  type AuditSample,
  type AuditWorld,
  auditReader,
  batchAuditSample,
  expectedBatchDrops,
  expectedMetrics,
  type ReportedDrop,
} from './verifier.js';

export const POLICY = 'policy';
export const NO_SALT = 'policy-nosalt';
export const SLOW = 'slow-policy';
export const RAW = 'raw-policy';
export const FLOOR = 'floor-policy';
/** The twins' base model (the raw and floor pools serve it). */
const BASE_MODEL = 'qwen3-twin';
/** The adapter every LoRA pool serves. */
const ADAPTER = 'policy';

/** A pool version for the weights that computed a token: the adapter's version, else the base update count. */
export function versionOf(weights: TwinWeights): number {
  return weights.lora ? weights.lora.version : weights.base;
}

export interface Twins {
  readonly main: MockVllm;
  readonly slow: MockVllm;
  readonly raw: MockVllm;
  readonly floor: MockVllm;
}

export interface AttemptHandle {
  readonly rolloutId: string;
  readonly attemptId: string;
  /** The agent's SDK client on the attempt's base URL. */
  readonly client: OpenAI;
}

export interface AuditReport {
  /** Everything that is not true to the ledger; empty when the data is clean. */
  readonly problems: string[];
  readonly batch: Batch;
  readonly triplets: number;
  readonly exported: Readonly<Record<ExportLevel, number>>;
}

/** An answer long enough (about 60 tokens) that a test can act while it is being generated. */
const slowRespond: MockRespond = (prompt) => {
  const words = Array.from({ length: 30 }, (_, i) => `step${i}`).join(' ');
  return `Working through ${prompt.tokenIds.length} prompt tokens: ${words}.`;
};

async function twinPost(twin: MockVllm, path: string, body: unknown = {}): Promise<void> {
  const res = await fetch(`${twin.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`twin ${path}: ${res.status} ${text}`);
}

/** Prometheus text -> value per full series name (`name{labels}`). */
async function scrape(gatewayUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** Sum of the series of `name` whose labels include all of `labels`. */
function seriesSum(metrics: Map<string, number>, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const [series, value] of metrics) {
    if (!series.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

export class AuditRig {
  private constructor(
    readonly gw: TestGateway,
    readonly twins: Twins,
  ) {}

  static async start(): Promise<AuditRig> {
    const started: MockVllm[] = [];
    const twin = async (options: Parameters<typeof startEngineTwin>[0]) => {
      const t = await startEngineTwin({ tokenizer: 'qwen3', model: BASE_MODEL, ...options });
      started.push(t);
      return t;
    };
    try {
      const twins: Twins = {
        main: await twin({ logprobsMode: 'processed' }),
        slow: await twin({ logprobsMode: 'processed', interTokenMs: 4, paceNonStream: true, respond: slowRespond }),
        raw: await twin({ logprobsMode: 'raw' }),
        floor: await twin({ logprobsMode: 'processed', floorLogprobEvery: 5 }),
      };
      for (const t of [twins.main, twins.slow]) {
        await twinPost(t, '/v1/load_lora_adapter', { lora_name: ADAPTER, lora_path: '/ckpt/1' });
      }
      const pool = (name: string, t: MockVllm, extra: Record<string, unknown>) => ({
        name,
        backends: [{ url: t.url }],
        logprobs: 'always' as const,
        health: { intervalMs: 0 },
        ...extra,
      });
      const gw = await startTestGateway({
        models: [
          pool(POLICY, twins.main, { upstreamModel: ADAPTER, version: 1, logprobsMode: 'processed' }),
          pool(NO_SALT, twins.main, {
            upstreamModel: ADAPTER,
            version: 1,
            logprobsMode: 'processed',
            prefixCache: { strategy: 'off' },
          }),
          pool(SLOW, twins.slow, { upstreamModel: ADAPTER, version: 1, logprobsMode: 'processed' }),
          pool(RAW, twins.raw, { upstreamModel: BASE_MODEL, logprobsMode: 'raw' }),
          pool(FLOOR, twins.floor, { upstreamModel: BASE_MODEL, logprobsMode: 'processed' }),
        ],
        // Calls that arrive during a weight sync wait for it instead of being refused.
        pause: { mode: 'hold' },
      });
      return new AuditRig(gw, twins);
    } catch (error) {
      await Promise.all(started.map((t) => t.close()));
      throw error;
    }
  }

  get store() {
    return this.gw.gateway.store;
  }

  async attempt(): Promise<AttemptHandle> {
    const started = await this.store.startRollout({ input: {} });
    const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
    const client = new OpenAI({ baseURL: attemptBaseUrl(this.gw.url, ids), apiKey: 'agent-key', maxRetries: 0 });
    return { ...ids, client };
  }

  /** The agent's end: its reward through the gateway's reward route, then the attempt succeeds. */
  async finish(attempt: AttemptHandle, reward = 1): Promise<void> {
    await postReward({ rewardUrl: attemptRewardUrl(this.gw.url, attempt), apiKey: 'agent-key', value: reward });
    await this.store.updateAttempt(attempt.rolloutId, attempt.attemptId, { status: 'succeeded' });
  }

  /** POST to a twin's own route (dev routes: /pause, /abort_requests, /v1/load_lora_adapter, ...). */
  post(twin: MockVllm, path: string, body?: unknown): Promise<void> {
    return twinPost(twin, path, body);
  }

  /** Moves a pool to `version` through the admin API (same backends), as an operator would. */
  async setPoolVersion(pool: string, version: number): Promise<void> {
    const listed = (await (await fetch(`${this.gw.url}/admin/pools`)).json()) as {
      pools: Array<{ model: string; backends: Array<{ url: string }> }>;
    };
    const backends = listed.pools.find((p) => p.model === pool)?.backends.map((b) => ({ url: b.url })) ?? [];
    const res = await fetch(`${this.gw.url}/admin/pools/${pool}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version, backends }),
    });
    if (!res.ok) throw new Error(`PUT /admin/pools/${pool}: ${res.status} ${await res.text()}`);
  }

  metrics(): Promise<Map<string, number>> {
    return scrape(this.gw.url);
  }

  /** The world the verifier reads for these attempts: every twin's ledger, the attempts' spans. */
  async world(attempts: readonly AttemptHandle[]): Promise<AuditWorld> {
    const spans = new Map<string, Span[]>();
    for (const a of attempts) spans.set(a.rolloutId, (await this.store.querySpans(a.rolloutId)).items);
    const { main, slow, raw, floor } = this.twins;
    return { ledgers: [main.ledger, slow.ledger, raw.ledger, floor.ledger], spans, versionOf };
  }

  /**
   * Every reader over `attempts` (each a finished rollout, its own group), checked against the ledgers; the
   * /metrics counters compared with `before`, a scrape taken before the attempts ran.
   */
  async audit(attempts: readonly AttemptHandle[], before: Map<string, number>): Promise<AuditReport> {
    const world = await this.world(attempts);
    const problems: string[] = [];

    const finished = new Map<string, Rollout>();
    for (const a of attempts) {
      const rollout = await this.store.getRolloutById(a.rolloutId);
      if (rollout) finished.set(a.rolloutId, rollout);
    }
    const batch = await buildBatch({
      store: this.store,
      batchId: 'audit',
      step: 0,
      rollouts: attempts.map((a) => ({ rolloutId: a.rolloutId, groupId: a.rolloutId })),
      finished,
      currentVersion: 0,
      // The audit is about truth, not staleness: versions are checked token by token instead.
      maxStaleness: Number.MAX_SAFE_INTEGER,
      estimator: 'reinforce',
      normalizeStd: false,
      level: 'trajectory',
      maxPromptLength: 1 << 20,
      maxResponseLength: 1 << 20,
      rewardFillna: 0,
    });
    const batchSamples = batch.samples.map(batchAuditSample);
    // The batch names no calls, only counts: each call's fate is checked through its samples, the counts here.
    problems.push(...auditReader(world, { samples: batchSamples, drops: null }));
    const wantDrops = expectedBatchDrops(world);
    for (const [reason, count] of Object.entries(wantDrops)) {
      const got = (batch.stats.dropped as unknown as Record<string, number | undefined>)[reason];
      if (got !== count) problems.push(`batch: stats.dropped.${reason} is ${got}, the ledger says ${count}`);
    }

    const exported = { trajectory: 0, transition: 0, triplet: 0 };
    for (const level of ['trajectory', 'transition', 'triplet'] as const) {
      const drops: ReportedDrop[] = [];
      const samples: AuditSample[] = [];
      for await (const row of exportRows({
        store: this.store,
        level,
        rolloutIds: attempts.map((a) => a.rolloutId),
        onDropped: (d) => drops.push(d),
      })) {
        samples.push({
          source: `export:${level}`,
          rolloutId: row.rollout_id,
          promptIds: row.prompt_ids,
          responseIds: row.response_ids,
          responseMask: row.response_mask,
          logprobs: row.logprobs,
          modelVersion: row.model_version,
          sequenceIds: row.sequence_ids,
          logprobsMeaning: 'declared',
        });
      }
      exported[level] = samples.length;
      problems.push(...auditReader(world, { samples, drops }));
    }

    const tripletSamples: AuditSample[] = [];
    const tripletDrops: ReportedDrop[] = [];
    for (const [rolloutId, spans] of world.spans) {
      const triplets = spansToTriplets(spans, { onDropped: (d) => tripletDrops.push({ ...d, rolloutId }) });
      for (const t of triplets) {
        tripletSamples.push({
          source: 'triplet',
          rolloutId,
          promptIds: t.prompt.token_ids,
          responseIds: t.response.token_ids,
          responseMask: t.response.token_ids.map(() => 1),
          logprobs: t.response.logprobs ?? null,
          modelVersion: null,
          sequenceIds: [t.metadata.sequence_id],
          logprobsMeaning: 'declared',
        });
      }
    }
    problems.push(...auditReader(world, { samples: tripletSamples, drops: tripletDrops }));

    const after = await this.metrics();
    for (const [model, want] of expectedMetrics(world)) {
      const delta = (name: string, labels: Record<string, string>) =>
        seriesSum(after, name, { model, ...labels }) - seriesSum(before, name, { model, ...labels });
      const checks: Array<[string, number, number]> = [
        ['rollgate_calls_aborted_total', delta('rollgate_calls_aborted_total', {}), want.aborted],
        [
          'rollgate_token_ids_incomplete_total (all reasons)',
          delta('rollgate_token_ids_incomplete_total', {}),
          want.incomplete + want.countMismatch,
        ],
        [
          'rollgate_token_ids_incomplete_total{reason="count_mismatch"}',
          delta('rollgate_token_ids_incomplete_total', { reason: 'count_mismatch' }),
          want.countMismatch,
        ],
        [
          'rollgate_logprobs_dropped_total{reason="floor"}',
          delta('rollgate_logprobs_dropped_total', { reason: 'floor' }),
          want.floor,
        ],
      ];
      for (const [name, got, expected] of checks) {
        if (got !== expected) problems.push(`/metrics ${model}: ${name} moved by ${got}, the ledger says ${expected}`);
      }
    }
    return { problems, batch, triplets: tripletSamples.length, exported };
  }

  async close(): Promise<void> {
    await this.gw.close();
    const { main, slow, raw, floor } = this.twins;
    await Promise.all([main, slow, raw, floor].map((t) => t.close()));
  }
}
