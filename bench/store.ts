// Store benchmark (`npm run bench:store`): span ingest, sequence ids and the agent-lightning v0.3 runner
// workload against any LightningStore. Add a backend by passing another StoreBenchBackend to runStoreWorkloads.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Attributes, LightningStore, SpanInput } from '../src/store/core/types.js';
import { MemoryStore } from '../src/store/memory/memory.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';

export interface StoreBenchBackend {
  name: string;
  /** A fresh, empty store for one workload. */
  create(): Promise<LightningStore>;
  /** Called once after all workloads. */
  dispose?(): Promise<void>;
}

export interface BenchResult {
  backend: string;
  workload: string;
  value: number;
  unit: string;
  target?: number;
}

export interface StoreBenchOptions {
  /** Scales operation counts (1 = default sizes); use < 1 for a quick smoke run. */
  scale?: number;
  /** v0.3 workload shapes: N runners, k spans per rollout. */
  runnerShapes?: ReadonlyArray<{ runners: number; spansPerRollout: number }>;
}

const DEFAULT_SHAPES = [
  { runners: 32, spansPerRollout: 6 },
  { runners: 300, spansPerRollout: 6 },
  { runners: 512, spansPerRollout: 20 },
] as const;

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** A chat span with fresh random trace and span ids and the given attributes. */
export function benchSpan(options: {
  rolloutId: string;
  attemptId: string;
  sequenceId?: number;
  attributes: Attributes;
}): SpanInput {
  const traceId = hex(16);
  const spanId = hex(8);
  return {
    rollout_id: options.rolloutId,
    attempt_id: options.attemptId,
    ...(options.sequenceId === undefined ? {} : { sequence_id: options.sequenceId }),
    trace_id: traceId,
    span_id: spanId,
    parent_id: null,
    name: 'chat qwen2.5-7b',
    status: { status_code: 'OK', description: null },
    attributes: options.attributes,
    events: [],
    links: [],
    start_time: Date.now() / 1000,
    end_time: Date.now() / 1000,
    context: { trace_id: traceId, span_id: spanId, is_remote: false, trace_state: {} },
    parent: null,
    resource: { attributes: { 'service.name': 'rollgate' }, schema_url: '' },
  };
}

export const PROMPT_IDS = Array.from({ length: 600 }, (_, i) => (i * 7919) % 151_000);
export const RESPONSE_IDS = Array.from({ length: 150 }, (_, i) => (i * 104_729) % 151_000);

/**
 * A span shaped like one LLM call recorded by the gateway: 600 prompt and 150 response token ids (~3 KB packed).
 * `small` drops the token ids (the shape of an agent-side or reward span).
 */
function callSpan(
  rolloutId: string,
  attemptId: string,
  sequenceId?: number,
  options: { small?: boolean } = {},
): SpanInput {
  return benchSpan({
    rolloutId,
    attemptId,
    ...(sequenceId === undefined ? {} : { sequenceId }),
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'qwen2.5-7b',
      'gen_ai.usage.input_tokens': 600,
      'gen_ai.usage.output_tokens': 150,
      ...(options.small === true ? {} : { prompt_token_ids: PROMPT_IDS, response_token_ids: RESPONSE_IDS }),
      'rollgate.response.message': '{"role":"assistant","content":"The answer is 42."}',
    },
  });
}

function perSecond(count: number, startedMs: number): number {
  return count / ((performance.now() - startedMs) / 1000);
}

async function withStore<T>(backend: StoreBenchBackend, run: (store: LightningStore) => Promise<T>): Promise<T> {
  const store = await backend.create();
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

async function spansSequential(store: LightningStore, count: number): Promise<number> {
  const { rollout_id, attempt } = await store.startRollout({ input: 'bench' });
  const spans = Array.from({ length: count }, () => callSpan(rollout_id, attempt.attempt_id));
  const t0 = performance.now();
  for (const span of spans) await store.addSpan(span);
  return perSecond(count, t0);
}

async function spansConcurrent(
  store: LightningStore,
  options: { count: number; inFlight: number; small?: boolean },
): Promise<number> {
  const { count, inFlight } = options;
  const { rollout_id, attempt } = await store.startRollout({ input: 'bench' });
  const spans = Array.from({ length: count }, () =>
    callSpan(rollout_id, attempt.attempt_id, undefined, { small: options.small === true }),
  );
  const t0 = performance.now();
  for (let i = 0; i < count; i += inFlight) {
    await Promise.all(spans.slice(i, i + inFlight).map((span) => store.addSpan(span)));
  }
  return perSecond(count, t0);
}

async function spansBulk(store: LightningStore, count: number, batch: number): Promise<number> {
  const { rollout_id, attempt } = await store.startRollout({ input: 'bench' });
  const spans = Array.from({ length: count }, () => callSpan(rollout_id, attempt.attempt_id));
  const t0 = performance.now();
  for (let i = 0; i < count; i += batch) await store.addManySpans(spans.slice(i, i + batch));
  return perSecond(count, t0);
}

async function sequenceIds(store: LightningStore, count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await store.nextSequenceId('ro-bench');
  return perSecond(count, t0);
}

/**
 * agent-lightning v0.3 shape: N runners each loop dequeue -> k calls (sequence id, then the call's span) ->
 * mark the attempt succeeded, until the queue is drained. Returns rollouts per second. Given several instances
 * of one store (replicas), the runners are spread over them round-robin; `span` defaults to a gateway call span.
 */
export async function runnerWorkload(
  stores: LightningStore | readonly LightningStore[],
  options: {
    runners: number;
    spansPerRollout: number;
    rollouts: number;
    span?: (rolloutId: string, attemptId: string, sequenceId: number) => SpanInput;
  },
): Promise<number> {
  const replicas: readonly LightningStore[] = Array.isArray(stores) ? stores : [stores as LightningStore];
  const span = options.span ?? callSpan;
  await (replicas[0] as LightningStore).enqueueManyRollouts(
    Array.from({ length: options.rollouts }, (_, i) => ({ input: { task: i } })),
  );
  let completed = 0;
  const t0 = performance.now();
  const runner = async (index: number) => {
    const store = replicas[index % replicas.length] as LightningStore;
    const workerId = `runner-${index}`;
    for (;;) {
      const claimed = await store.dequeueRollout({ worker_id: workerId });
      if (claimed === null) return;
      const aid = claimed.attempt.attempt_id;
      for (let k = 0; k < options.spansPerRollout; k++) {
        const seq = await store.nextSequenceId(claimed.rollout_id, aid);
        await store.addSpan(span(claimed.rollout_id, aid, seq));
      }
      await store.updateAttempt(claimed.rollout_id, aid, { status: 'succeeded' });
      completed++;
    }
  };
  await Promise.all(Array.from({ length: options.runners }, (_, i) => runner(i)));
  const rate = perSecond(completed, t0);
  if (completed !== options.rollouts) throw new Error(`runner workload completed ${completed}/${options.rollouts}`);
  return rate;
}

/** Runs every workload against one backend; each workload gets a fresh store. */
export async function runStoreWorkloads(
  backend: StoreBenchBackend,
  options: StoreBenchOptions = {},
): Promise<BenchResult[]> {
  const scale = options.scale ?? 1;
  const n = (base: number) => Math.max(10, Math.round(base * scale));
  const results: BenchResult[] = [];
  const add = (workload: string, value: number, unit: string, target?: number) => {
    results.push({ backend: backend.name, workload, value, unit, ...(target === undefined ? {} : { target }) });
  };
  add('addSpan, one at a time', await withStore(backend, (s) => spansSequential(s, n(20_000))), 'spans/s');
  add(
    'addSpan, 256 in flight (batched commit)',
    await withStore(backend, (s) => spansConcurrent(s, { count: n(100_000), inFlight: 256 })),
    'spans/s',
  );
  add(
    'addSpan, 256 in flight, spans without token ids',
    await withStore(backend, (s) => spansConcurrent(s, { count: n(100_000), inFlight: 256, small: true })),
    'spans/s',
  );
  add('addManySpans x100', await withStore(backend, (s) => spansBulk(s, n(100_000), 100)), 'spans/s');
  add('nextSequenceId, one at a time', await withStore(backend, (s) => sequenceIds(s, n(1_000_000))), 'ids/s');
  for (const shape of options.runnerShapes ?? DEFAULT_SHAPES) {
    const rollouts = Math.max(shape.runners * 4, n(4_000));
    add(
      `v0.3 runners N=${shape.runners}, k=${shape.spansPerRollout}`,
      await withStore(backend, (s) => runnerWorkload(s, { ...shape, rollouts })),
      'rollouts/s',
    );
  }
  return results;
}

export function memoryBenchBackend(): StoreBenchBackend {
  return { name: 'memory', create: async () => new MemoryStore() };
}

export function sqliteBenchBackend(): StoreBenchBackend {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-'));
  let index = 0;
  return {
    name: 'sqlite (WAL, synchronous=NORMAL)',
    create: async () => new SqliteStore({ path: join(dir, `bench-${index++}.db`) }),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

const TARGETS: Record<string, number> = {
  'memory|addSpan, 256 in flight (batched commit)': 100_000,
  'memory|nextSequenceId, one at a time': 1_000_000,
  'sqlite|addSpan, 256 in flight (batched commit)': 25_000,
};

function targetFor(result: BenchResult): number | undefined {
  if (result.workload.startsWith('v0.3 runners')) return 500;
  const key = `${result.backend.split(' ')[0]}|${result.workload}`;
  return TARGETS[key];
}

export function toMarkdown(results: readonly BenchResult[]): string {
  const lines = ['| backend | workload | result | target | met |', '|---|---|---:|---:|:---:|'];
  for (const r of results) {
    const target = r.target ?? targetFor(r);
    const value = `${Math.round(r.value).toLocaleString('en-US')} ${r.unit}`;
    const met = target === undefined ? '' : r.value >= target ? 'yes' : 'no';
    lines.push(`| ${r.backend} | ${r.workload} | ${value} | ${target?.toLocaleString('en-US') ?? ''} | ${met} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const scale = Number(process.env.ROLLGATE_BENCH_SCALE ?? '1');
  const backends = [memoryBenchBackend(), sqliteBenchBackend()];
  const results: BenchResult[] = [];
  try {
    for (const backend of backends) results.push(...(await runStoreWorkloads(backend, { scale })));
  } finally {
    for (const backend of backends) await backend.dispose?.();
  }
  process.stdout.write(`${toMarkdown(results)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
