// Growth benchmark (`npm run bench:store-scale`): what history costs a store, at checkpoints up to a million
// rollouts. The first checkpoint is written through the store API, rollouts shaped like a real RL run (32 at a
// time): that is where bytes per stored token and the write rate are measured. Past it, history is filled by
// copying one of those rollouts in SQL, every row the store wrote for it (bench/store-scale-clone.ts), so 1 M
// rollouts take minutes instead of hours. At every checkpoint, in a freshly opened store: the file, bytes per
// stored token, cold open + statistics, heap after GC, a rollout status page, then 1,000 more realistic rollouts
// written through the API at that size (their rate and the worst event-loop delay while writing); then the
// proxied-call latency of a gateway on that file against one on an empty store, in the same run
// (bench/store-scale-proxy.ts). docs/benchmarks.md ("Store scale") has the method and the numbers.
//
// Shape of one rollout: test/helpers/rl-rollout-shape.ts (the issue's: 4 calls of ~2,000 prompt ids sharing a
// growing prefix, 200 response ids with logprobs and `logprobs.content`, ~8 KB of messages each).
//
//   npm run bench:store-scale                       SQLite, checkpoints 10k (API) and 100k (copies)
//   npm run bench:store-scale -- --to 10000         stop at 10k
//   npm run bench:store-scale -- --to 1000000       add the 1M checkpoint (rl: ~1.4 GB per 100k rollouts of disk)
//   npm run bench:store-scale -- --api 100000       write the first 100k through the API (no copies before it)
//   npm run bench:store-scale -- --shape cheap      1 attempt and 1 small span per rollout: the record count of a
//                                                   long run (heap, cold open, pages) without its bytes
//   npm run bench:store-scale -- --proxy-rounds 0   skip the proxied-call latency
//   npm run bench:store-scale -- --trace-stalls     print every event-loop stall over 100 ms while writing, with
//                                                   the GC pauses and WAL checkpoints around it
//   npm run bench:store-scale -- --shape cheap --api 300000 --to 300000 --proxy-rounds 0
//                                                   RSS every 10,000 rollouts over a long run through the API
//   npm run bench:store-scale -- --backend postgres (ROLLGATE_TEST_PG_URL; bytes = the spans table's size; every
//                                                   rollout through the API, no latency table)
import { mkdtempSync, readFileSync, rmSync, statfsSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import pg from 'pg';
import type { LightningStore, SpanInput } from '../src/store/core/types.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';
import { RESPONSE_IDS, rolloutCalls } from '../test/helpers/rl-rollout-shape.js';
import { startMockVllm } from '../test/servers/mock-vllm.js';
import { type IdleProbe, startIdleProbe } from './idle-probe-client.js';
import { benchSpan } from './store.js';
import { cloneRollouts } from './store-scale-clone.js';
import { type LatencyPhase, measureProxyLatency } from './store-scale-proxy.js';

const IN_FLIGHT = 32;
const CHECKPOINTS = [10_000, 100_000, 1_000_000];

interface Backend {
  readonly name: string;
  /** SQLite: the file (copies and the gateways need it); null for PostgreSQL. */
  readonly path: string | null;
  open(): Promise<LightningStore>;
  /** Bytes the store occupies now. */
  bytes(): Promise<number>;
  dispose(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-store-scale-'));
  const path = join(dir, 'store.db');
  const size = (file: string): number => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  return {
    name: 'sqlite',
    path,
    open: async () => new SqliteStore({ path, fileCheckIntervalMs: 0 }),
    bytes: async () => size(path) + size(`${path}-wal`),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function postgresBackend(url: string): Backend {
  const schema = `store_scale_${process.pid}`;
  const sql = async <T>(run: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  };
  return {
    name: 'postgres',
    path: null,
    open: () => openPostgresStore({ url, schema, poolSize: 10 }),
    bytes: () =>
      sql(async (client) => {
        const result = await client.query<{ bytes: string | null }>(
          `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = $1`,
          [schema],
        );
        return Number(result.rows[0]?.bytes ?? 0);
      }),
    dispose: () => sql(async (client) => void (await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))),
  };
}

interface Written {
  readonly rolloutId: string;
  readonly tokens: number;
}

/**
 * The CPU time (process.cpuUsage: all threads, an upper bound) of each store call's synchronous part, where the
 * SQLite work and a span's encoding happen: what one request holds the event loop for. The event-loop delay also
 * holds the benchmark's own work (32 writers resume in the turn a commit answers them, each generating its next
 * call) and, on a loaded box, time spent waiting for a CPU.
 */
const storeCallCpuMs: number[] = [];

function cpuTimed<T>(run: () => Promise<T>): Promise<T> {
  const cpu = process.cpuUsage();
  const promise = run();
  const used = process.cpuUsage(cpu);
  storeCallCpuMs.push((used.user + used.system) / 1000);
  return promise;
}

async function writeRollout(store: LightningStore, seed: number): Promise<Written> {
  const { rollout_id, attempt } = await cpuTimed(() => store.startRollout({ input: { task: seed } }));
  let tokens = 0;
  for (const attributes of rolloutCalls(rollout_id, attempt.attempt_id, seed)) {
    const span: SpanInput = benchSpan({ rolloutId: rollout_id, attemptId: attempt.attempt_id, attributes });
    await cpuTimed(() => store.addSpan(span));
    tokens += (attributes.prompt_token_ids as number[]).length + RESPONSE_IDS;
  }
  await cpuTimed(() => store.updateAttempt(rollout_id, attempt.attempt_id, { status: 'succeeded' }));
  await cpuTimed(() => store.updateRollout(rollout_id, { status: 'succeeded' }));
  return { rolloutId: rollout_id, tokens };
}

/** The cheap shape: one attempt with one small span, so a million rollouts fit the time of a benchmark. */
async function writeCheapRollout(store: LightningStore, seed: number): Promise<Written> {
  const { rollout_id, attempt } = await cpuTimed(() => store.startRollout({ input: { task: seed } }));
  const attributes = {
    'gen_ai.operation.name': 'chat',
    prompt_token_ids: [seed % 151_000, 7],
    response_token_ids: [9],
  };
  const span = benchSpan({ rolloutId: rollout_id, attemptId: attempt.attempt_id, attributes });
  await cpuTimed(() => store.addSpan(span));
  await cpuTimed(() => store.updateAttempt(rollout_id, attempt.attempt_id, { status: 'succeeded' }));
  return { rolloutId: rollout_id, tokens: 3 };
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

interface Memory {
  readonly rssMb: number;
  /** Anonymous memory (smaps_rollup): the heaps of V8 and of malloc (SQLite's page caches), not mapped files. */
  readonly anonymousMb: number | null;
  readonly heapUsedMb: number;
  readonly heapTotalMb: number;
}

/** The process's memory now, after a full GC: what the run keeps, not what it has yet to collect. */
function memoryNow(): Memory {
  heapAfterGc();
  const usage = process.memoryUsage();
  let anonymousMb: number | null = null;
  try {
    const kb = /^Anonymous:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1];
    if (kb !== undefined) anonymousMb = Number(kb) / 1024;
  } catch {
    // Not Linux: RSS and the V8 heap only.
  }
  return {
    rssMb: usage.rss / 2 ** 20,
    anonymousMb,
    heapUsedMb: usage.heapUsed / 2 ** 20,
    heapTotalMb: usage.heapTotal / 2 ** 20,
  };
}

function argValue(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

function fileBytes(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * `--trace-stalls`: a 10 ms timer that reports every gap over 100 ms with what happened in it: GC pauses (from the
 * `gc` performance entries) and the WAL file's size before and after; and every time the WAL file shrinks.
 */
function traceStalls(options: { walPath: string | null; written: () => number }): () => void {
  const gcs: { start: number; ms: number; kind: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind?: number } | null }).detail;
      const kind = detail?.kind ?? 0;
      gcs.push({ start: entry.startTime, ms: entry.duration, kind });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  let last = performance.now();
  let wal = options.walPath === null ? 0 : fileBytes(options.walPath);
  const timer = setInterval(() => {
    const now = performance.now();
    const walNow = options.walPath === null ? 0 : fileBytes(options.walPath);
    const gap = now - last;
    // A WAL that shrinks was restarted and cut back to its size limit (a truncation inside some commit).
    if (gap > 100 || walNow < wal / 2) {
      const inGap = gcs.filter((g) => g.start + g.ms >= last && g.start <= now);
      const gcText = inGap.map((g) => `${g.ms.toFixed(0)} ms (kind ${g.kind})`).join(', ') || 'none';
      console.error(
        `stall ${gap.toFixed(0)} ms at ${options.written()} rollouts; GC in it: ${gcText}; ` +
          `WAL ${(wal / 1e6).toFixed(1)} -> ${(walNow / 1e6).toFixed(1)} MB; load ${loadavg()[0]?.toFixed(1)}`,
      );
    }
    while (gcs.length > 0 && (gcs[0]?.start ?? 0) < last - 1000) gcs.shift();
    last = now;
    wal = walNow;
  }, 10);
  return () => {
    clearInterval(timer);
    observer.disconnect();
  };
}

interface Segment {
  readonly rate: number;
  readonly loopMaxMs: number;
  /** The do-nothing process's worst delay over the same window: what scheduling alone cost. */
  readonly idleMaxMs: number;
  /** The longest synchronous part of one store call, and the 99th percentile, in CPU ms (cpuTimed). */
  readonly callCpuMaxMs: number;
  readonly callCpuP99Ms: number;
  readonly tokens: number;
  /** The last rollout written: the copies' template (the first ones are written before the shared dictionaries). */
  readonly last: Written | null;
}

/** Writes `count` rollouts through the store API, IN_FLIGHT at a time. */
async function writeThroughApi(options: {
  store: LightningStore;
  count: number;
  seedFrom: number;
  write: (store: LightningStore, seed: number) => Promise<Written>;
  progress: (done: number) => void;
  trace: { walPath: string | null } | null;
  probe: IdleProbe;
}): Promise<Segment> {
  await options.probe.reset();
  storeCallCpuMs.length = 0;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let next = 0;
  let done = 0;
  let tokens = 0;
  let last: Written | null = null;
  const stopTrace =
    options.trace === null ? null : traceStalls({ walPath: options.trace.walPath, written: () => done });
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < options.count) {
      const seed = options.seedFrom + next++;
      const written = await options.write(options.store, seed);
      last = written;
      // Read after the await: `tokens += await ...` would add to a stale total under concurrency.
      tokens += written.tokens;
      done++;
      if (done % 10_000 === 0) options.progress(done);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  stopTrace?.();
  delay.disable();
  const idleMaxMs = await options.probe.maxDelayMs();
  const sorted = [...storeCallCpuMs].sort((a, b) => a - b);
  const callCpuMaxMs = sorted.at(-1) ?? 0;
  const callCpuP99Ms = sorted[Math.floor(0.99 * (sorted.length - 1))] ?? 0;
  return {
    rate: options.count / seconds,
    loopMaxMs: delay.max / 1e6,
    idleMaxMs,
    callCpuMaxMs,
    callCpuP99Ms,
    tokens,
    last,
  };
}

/** Refuses copies that would fill the disk past 80 % (the estimate: bytes per rollout at the first checkpoint). */
function checkDisk(options: { dir: string; bytesNeeded: number }): void {
  const fs = statfsSync(options.dir);
  // As df counts it: used over used + available (blocks reserved for root count in neither).
  const used = (fs.blocks - fs.bfree) * fs.bsize;
  const after = (used + options.bytesNeeded) / (used + fs.bavail * fs.bsize);
  if (after > 0.8) {
    throw new Error(
      `copies need ~${(options.bytesNeeded / 1e9).toFixed(1)} GB: the disk would be ${(after * 100).toFixed(0)} % full (limit 80 %)`,
    );
  }
}

const fmt = (n: number): string => n.toLocaleString('en-US');
const load = (): string => loadavg()[0]?.toFixed(1) ?? '?';

async function main(): Promise<void> {
  const to = Number(argValue('--to') ?? 100_000);
  const which = argValue('--backend') ?? 'sqlite';
  const shape = argValue('--shape') ?? 'rl';
  if (shape !== 'rl' && shape !== 'cheap') throw new Error('--shape is rl (default) or cheap');
  const write = shape === 'cheap' ? writeCheapRollout : writeRollout;
  const url = process.env.ROLLGATE_TEST_PG_URL;
  if (which === 'postgres' && url === undefined) throw new Error('--backend postgres needs ROLLGATE_TEST_PG_URL');
  const backend = which === 'postgres' && url !== undefined ? postgresBackend(url) : sqliteBackend();
  if ((globalThis as { gc?: unknown }).gc === undefined) console.error('run with --expose-gc for heap numbers');
  const checkpoints = CHECKPOINTS.filter((c) => c <= to);
  if (!checkpoints.includes(to)) checkpoints.push(to);
  const api = Number(argValue('--api') ?? checkpoints[0]);
  if (!checkpoints.includes(api)) checkpoints.push(api);
  checkpoints.sort((a, b) => a - b);
  // Short rounds, many of them: the two gateways take turns every 20 calls, so a change in the box's load hits both.
  const proxyRounds = backend.path === null ? 0 : Number(argValue('--proxy-rounds') ?? 50);
  const trace = process.argv.includes('--trace-stalls') ? { walPath: backend.path && `${backend.path}-wal` } : null;
  const t0 = performance.now();
  const progress = (label: string) => (done: number) =>
    console.error(
      `${backend.name}: ${label} ${fmt(done)}, ${((performance.now() - t0) / 1000).toFixed(0)} s, load ${load()}`,
    );
  // RSS while rollouts are written through the API, every 10,000: whether the process's memory levels off.
  const memoryRows: string[] = [];
  const memoryRow = (written: number) => {
    const m = memoryNow();
    memoryRows.push(
      `| ${fmt(written)} | ${m.rssMb.toFixed(0)} | ${m.anonymousMb?.toFixed(0) ?? '-'} | ${m.heapUsedMb.toFixed(0)} | ` +
        `${m.heapTotalMb.toFixed(0)} |`,
    );
    console.error(memoryRows.at(-1));
  };
  memoryRow(0);
  const rows: string[] = [];
  const latencyRows: string[] = [];
  const mock = proxyRounds > 0 ? await startMockVllm() : null;
  const probe = await startIdleProbe();
  let store: LightningStore | null = await backend.open();
  let total = 0;
  let tokens = 0;
  let template: Written | null = null;
  let bytesPerRollout = 0;
  try {
    for (const checkpoint of checkpoints) {
      let how: string;
      let fill = '';
      if (total < api || backend.path === null) {
        // Through the API: where bytes per token and the write rate are measured.
        if (store === null) store = await backend.open();
        const segment = await writeThroughApi({
          store,
          count: checkpoint - total,
          seedFrom: total,
          write,
          progress: (done) => {
            progress('written')(total + done);
            memoryRow(total + done);
          },
          trace,
          probe,
        });
        template ??= segment.last;
        tokens += segment.tokens;
        total = checkpoint;
        how = 'API';
        fill =
          `${segment.rate.toFixed(0)} rollouts/s, max event-loop delay ${segment.loopMaxMs.toFixed(0)} ms ` +
          `(idle process ${segment.idleMaxMs.toFixed(0)} ms; longest store call ${segment.callCpuMaxMs.toFixed(1)} ms CPU, p99 ${segment.callCpuP99Ms.toFixed(1)})`;
        await store.close();
        store = null;
        bytesPerRollout = (await backend.bytes()) / total;
      } else {
        if (template === null) throw new Error('no template rollout');
        const count = checkpoint - total;
        checkDisk({ dir: tmpdir(), bytesNeeded: count * bytesPerRollout });
        const started = performance.now();
        cloneRollouts({
          path: backend.path,
          templateRolloutId: template.rolloutId,
          count,
          onProgress: (made) => {
            if (made % 100_000 === 0) progress('copied')(made);
          },
        });
        fill = `${(count / ((performance.now() - started) / 1000)).toFixed(0)} copies/s`;
        tokens += count * template.tokens;
        total = checkpoint;
        how = 'copies';
      }
      const bytes = await backend.bytes();
      // The process's heap with the store closed: what it holds besides the store (the stand-in, the SDK).
      const heapClosed = heapAfterGc();
      const openStart = performance.now();
      store = await backend.open();
      const stats = await store.statistics();
      const openMs = performance.now() - openStart;
      await yieldTurn();
      const heap = heapAfterGc();
      const pageStart = performance.now();
      await store.queryRollouts({ status_in: ['succeeded'], limit: 50, offset: 0, sort_order: 'desc' });
      const pageMs = performance.now() - pageStart;
      // 1,000 realistic rollouts written at this size: what a run still writing at this length gets.
      const more = await writeThroughApi({
        store,
        count: 1_000,
        seedFrom: total,
        write: writeRollout,
        progress: () => undefined,
        trace,
        probe,
      });
      // Per token of what the file held when it was measured, before these 1,000.
      const bytesPerToken = bytes / tokens;
      total += 1_000;
      tokens += more.tokens;
      await store.close();
      store = null;
      rows.push(
        `| ${backend.name}${shape === 'cheap' ? ', cheap' : ''} | ${fmt(checkpoint)} (${fmt(stats.total_rollouts)}) | ` +
          `${how}: ${fill} | ${(bytes / 1e9).toFixed(3)} GB | ${bytesPerToken.toFixed(2)} | ` +
          `${(openMs / 1000).toFixed(2)} s | ${(heap / 2 ** 20).toFixed(0)} MB (store ${((heap - heapClosed) / 2 ** 20).toFixed(1)} MB) | ` +
          `${pageMs.toFixed(1)} ms | ` +
          `${more.rate.toFixed(0)} | ${more.loopMaxMs.toFixed(0)} ms (${more.idleMaxMs.toFixed(0)} ms) | ` +
          `${more.callCpuMaxMs.toFixed(1)} ms (p99 ${more.callCpuP99Ms.toFixed(1)}) | ${load()} |`,
      );
      console.error(rows.at(-1));
      if (mock !== null && backend.path !== null) {
        const phases: LatencyPhase[] = await measureProxyLatency({
          storePath: backend.path,
          upstreamUrl: mock.url,
          rounds: proxyRounds,
          callsPerRound: 20,
          label: `ro-lat-${checkpoint}`,
        });
        for (const phase of phases) {
          const ratio = (a: number, b: number): string => (a / b).toFixed(2);
          latencyRows.push(
            `| ${fmt(checkpoint)} | ${phase.concurrency} | ${fmt(phase.calls)} | ${phase.full.p50Ms.toFixed(2)} / ` +
              `${phase.empty.p50Ms.toFixed(2)} ms | ${ratio(phase.full.p50Ms, phase.empty.p50Ms)} | ` +
              `${phase.full.p99Ms.toFixed(2)} / ${phase.empty.p99Ms.toFixed(2)} ms | ` +
              `${ratio(phase.full.p99Ms, phase.empty.p99Ms)} | ${phase.full.loopMaxMs.toFixed(0)} / ` +
              `${phase.empty.loopMaxMs.toFixed(0)} ms | ${load()} |`,
          );
          console.error(latencyRows.at(-1));
        }
      }
    }
  } finally {
    await store?.close();
    await mock?.close();
    probe.close();
    await backend.dispose();
  }
  console.log(
    '| backend | rollouts (in the file) | rows | file | bytes per stored token | cold open | heap after GC (the open store: its share) | status page | ' +
      '1,000 rl rollouts: rollouts/s | their max event-loop delay (idle process) | their longest store call, CPU (p99) | load |',
  );
  console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
  console.log('');
  console.log('| rollouts written through the API | RSS MB | anonymous MB | V8 heap used MB | V8 heap total MB |');
  console.log('|---:|---:|---:|---:|---:|');
  for (const row of memoryRows) console.log(row);
  if (latencyRows.length > 0) {
    console.log('');
    console.log(
      '| rollouts | calls in flight | calls per gateway | p50 at N / empty | ratio | p99 at N / empty | ratio | gateway max event-loop delay, N / empty | load |',
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of latencyRows) console.log(row);
  }
}

await main();
