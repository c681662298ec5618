// `npm run bench:soak`: a long mixed-traffic run against one gateway on a SQLite store, looking for what only
// time shows: memory or descriptors that grow, latency that drifts, writes that go missing. Traffic: attributed
// chat calls (stream and non-stream, the official openai SDK as the agent), store API writes (spans, rewards,
// new rollouts), twin faults (503s, a stream cut after its first chunks, slow first bytes, a hang) on one of two
// backends, and that backend killed and restarted on its port every few minutes. Each sampling window reports
// RSS, heap after a full GC, open descriptors, p50/p99 latency of chat calls and store writes, and calls/errors.
// At the end the gateway is closed, the SQLite file reopened by a fresh gateway, and every acknowledged write is
// looked up there: `lost` must be 0.
//
// Everything runs in this process (gateway, twins, agents), so RSS and heap include the load generator: the twins'
// records are bounded (TWIN below) and the loss check keeps about 1 KB per rollout. Run with `--expose-gc` (the
// npm script does).
// The report ends with each series' least-squares slope per minute and whether it is flat (bench/trend.ts); the
// script exits 1 when anything acknowledged was lost.
// Flags (or env): --minutes (SOAK_MINUTES, default 30), --sample-seconds (SOAK_SAMPLE_SECONDS, 60),
// --concurrency (SOAK_CONCURRENCY, 8), --kill-every-s (SOAK_KILL_EVERY_S, 180), --out (SOAK_OUT: also write the
// report to this file). `npm run bench:soak -- --minutes 30` is the full run.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { configSchema } from '../config/schema.js';
import { createGateway, type Gateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import { type MockVllm, startEngineTwin } from '../test/servers/mock-vllm.js';
import { type Trend, trendOf } from './trend.js';

const { values: flags } = parseArgs({
  options: {
    minutes: { type: 'string' },
    'sample-seconds': { type: 'string' },
    concurrency: { type: 'string' },
    'kill-every-s': { type: 'string' },
    out: { type: 'string' },
  },
});

/** A flag, else its env variable, else the default; a value that is not a positive number stops the run. */
function setting(options: { flag: string | undefined; env: string; fallback: number }): number {
  const raw = options.flag ?? process.env[options.env];
  if (raw === undefined || raw === '') return options.fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    process.stderr.write(
      `bench:soak: ${options.env} / its flag must be a positive number, got ${JSON.stringify(raw)}\n`,
    );
    process.exit(2);
  }
  return value;
}

const MINUTES = setting({ flag: flags.minutes, env: 'SOAK_MINUTES', fallback: 30 });
const SAMPLE_S = setting({ flag: flags['sample-seconds'], env: 'SOAK_SAMPLE_SECONDS', fallback: 60 });
const CONCURRENCY = setting({ flag: flags.concurrency, env: 'SOAK_CONCURRENCY', fallback: 8 });
const KILL_EVERY_S = setting({ flag: flags['kill-every-s'], env: 'SOAK_KILL_EVERY_S', fallback: 180 });
const OUT = flags.out ?? process.env.SOAK_OUT;
const DOWN_S = 5;
const ROLLOUTS_PER_WORKER = 4;
// The twins' request log, ledger and prefix cache are unbounded by default (tests inspect them): over a soak they
// were most of the heap growth (about 0.35 KB per call on the backend that is never restarted), which is load
// generator, not gateway. Bounded here, so heap after GC measures the gateway.
const TWIN = { latencyMs: 5, ttftMs: 5, interTokenMs: 1, maxRecordedRequests: 200, maxCachedBlocks: 4_096 };
/** One fault every this many ms, on the backend that gets killed (so the other one keeps the pool serving). */
const FAULT_EVERY_MS = 2_000;
const FAULTS = ['status=503', 'close-after=2', 'slow-first-byte=300', 'hang', 'status=500;message=engine'];

const exposedGc = (globalThis as { gc?: () => void }).gc;
if (exposedGc === undefined) {
  process.stderr.write('bench:soak needs --expose-gc (run it with `npm run bench:soak`)\n');
  process.exit(2);
}
const gc: () => void = exposedGc;

interface Tracked {
  readonly rid: string;
  readonly aid: string;
  chatsAcked: number;
  /** Acknowledged spans by counter (their span id is derived from it): small integers, not 16-character strings. */
  readonly spanNumbers: number[];
}

/** One sampling window, as numbers, for the trends. */
interface Sample {
  readonly minute: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly fds: number;
  readonly chatP50: number;
  readonly chatP99: number;
  readonly storeP50: number;
  readonly storeP99: number;
  /** Heap after GC per thousand writes stored so far: what the in-memory copy of the store costs. */
  readonly heapPerKWrites: number;
}

/** What each series is judged by: how much it may grow over the run and still count as flat. */
const TREND_SERIES: ReadonlyArray<{
  readonly key: Exclude<keyof Sample, 'minute'>;
  readonly label: string;
  readonly unit: string;
  readonly relativeTolerance: number;
  readonly absoluteTolerance: number;
}> = [
  { key: 'rssMb', label: 'RSS', unit: 'MB', relativeTolerance: 0.1, absoluteTolerance: 20 },
  { key: 'heapMb', label: 'heap after GC', unit: 'MB', relativeTolerance: 0.1, absoluteTolerance: 10 },
  {
    key: 'heapPerKWrites',
    label: 'heap per 1k stored writes',
    unit: 'MB',
    relativeTolerance: 0.1,
    absoluteTolerance: 0.05,
  },
  { key: 'fds', label: 'open descriptors', unit: 'fds', relativeTolerance: 0.1, absoluteTolerance: 8 },
  { key: 'chatP50', label: 'chat p50', unit: 'ms', relativeTolerance: 0.25, absoluteTolerance: 5 },
  { key: 'chatP99', label: 'chat p99', unit: 'ms', relativeTolerance: 0.25, absoluteTolerance: 25 },
  { key: 'storeP50', label: 'store write p50', unit: 'ms', relativeTolerance: 0.25, absoluteTolerance: 2 },
  { key: 'storeP99', label: 'store write p99', unit: 'ms', relativeTolerance: 0.25, absoluteTolerance: 10 },
];

function trendRow(series: (typeof TREND_SERIES)[number], trend: Trend | null): string {
  if (trend === null) return `| ${series.label} | - | - | - | too few samples |`;
  const verdict = trend.flat ? 'flat' : 'GROWS';
  return (
    `| ${series.label} | ${trend.slopePerMinute.toFixed(3)} ${series.unit}/min | ${trend.start.toFixed(1)} | ` +
    `${trend.change >= 0 ? '+' : ''}${trend.change.toFixed(1)} | ${verdict} |`
  );
}

interface Window {
  chatMs: number[];
  storeMs: number[];
  calls: number;
  errors: number;
}

function freshWindow(): Window {
  return { chatMs: [], storeMs: [], calls: 0, errors: 0 };
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function openDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return Number.NaN;
  }
}

function config(db: string, urls: string[]) {
  return configSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    store: { kind: 'sqlite', path: db },
    logging: { level: 'silent' },
    models: [
      {
        name: 'mock-model',
        backends: urls.map((url) => ({ url })),
        retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
        timeouts: { connectMs: 500, firstByteMs: 1_000 },
        health: { intervalMs: 500, recoverAfterMs: 1_000, stallHoldMs: 2_000 },
      },
    ],
  });
}

async function postJson(url: string, body: unknown): Promise<{ ok: boolean; body: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return { ok: response.ok, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

function spanIdOf(counter: number): string {
  return counter.toString(16).padStart(16, '0');
}

function idsOf(body: unknown): { rid: string; aid: string } {
  const b = body as { rollout_id: string; attempt: { attempt_id: string } };
  return { rid: b.rollout_id, aid: b.attempt.attempt_id };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-soak-'));
  const db = join(dir, 'soak.db');
  const steady = await startEngineTwin(TWIN);
  let flaky: MockVllm | null = await startEngineTwin(TWIN);
  const flakyPort = flaky.port;
  const flakyUrl = flaky.url;
  const gateway: Gateway = await createGateway(config(db, [steady.url, flakyUrl]), { logger: silentLogger });
  const { url } = await gateway.listen();

  const tracked: Tracked[] = [];
  let window = freshWindow();
  const totals = {
    calls: 0,
    errors: 0,
    chatsAcked: 0,
    spansAcked: 0,
    rolloutsAcked: 0,
    rewardsAcked: 0,
    kills: 0,
    faults: 0,
  };
  const rows: string[] = [];
  const samples: Sample[] = [];
  const started = performance.now();
  const endAt = started + MINUTES * 60_000;
  let stopping = false;

  const newRollout = async (worker: number): Promise<Tracked | null> => {
    const created = await postJson(`${url}/v1/agl/rollouts`, { input: { worker }, mode: 'train' });
    if (!created.ok) return null;
    totals.rolloutsAcked += 1;
    const t: Tracked = { ...idsOf(created.body), chatsAcked: 0, spanNumbers: [] };
    tracked.push(t);
    return t;
  };

  let spanCounter = 0;
  const worker = async (index: number): Promise<void> => {
    const own: Tracked[] = [];
    for (let i = 0; i < ROLLOUTS_PER_WORKER; i++) {
      const t = await newRollout(index);
      if (t !== null) own.push(t);
    }
    for (let step = 0; !stopping; step++) {
      const target = own[step % own.length] as Tracked;
      const kind = step % 20;
      const t0 = performance.now();
      window.calls += 1;
      totals.calls += 1;
      try {
        if (kind < 12) {
          const agent = new OpenAI({
            baseURL: `${url}/rollout/${target.rid}/attempt/${target.aid}/v1`,
            apiKey: 'soak',
            maxRetries: 0,
            timeout: 30_000,
          });
          const messages = [{ role: 'user' as const, content: `step ${step} of worker ${index}` }];
          if (kind % 2 === 0) {
            await agent.chat.completions.create({ model: 'mock-model', messages, max_tokens: 16 });
          } else {
            const stream = await agent.chat.completions.create({
              model: 'mock-model',
              messages,
              max_tokens: 16,
              stream: true,
            });
            for await (const _chunk of stream) {
              // Drained: the call counts as acknowledged only once the stream ended without an error.
            }
          }
          target.chatsAcked += 1;
          totals.chatsAcked += 1;
          window.chatMs.push(performance.now() - t0);
        } else if (kind < 18) {
          spanCounter += 1;
          const spanNumber = spanCounter;
          const spanId = spanIdOf(spanNumber);
          const written = await postJson(`${url}/v1/agl/spans`, {
            rollout_id: target.rid,
            attempt_id: target.aid,
            trace_id: spanCounter.toString(16).padStart(32, '0'),
            span_id: spanId,
            parent_id: null,
            name: 'soak-tool',
            status: { status_code: 'OK' },
            attributes: { step, payload: 'x'.repeat(512) },
            events: [],
            links: [],
            start_time: Date.now() / 1000,
            end_time: Date.now() / 1000,
            context: null,
            parent: null,
            resource: { attributes: {}, schema_url: '' },
          });
          if (!written.ok) throw new Error('span write refused');
          target.spanNumbers.push(spanNumber);
          totals.spansAcked += 1;
          window.storeMs.push(performance.now() - t0);
        } else if (kind === 18) {
          const reward = await postJson(`${url}/v1/agl/rollouts/${target.rid}/attempts/${target.aid}/reward`, {
            value: step % 3,
          });
          if (!reward.ok) throw new Error('reward refused');
          totals.rewardsAcked += 1;
          window.storeMs.push(performance.now() - t0);
        } else {
          // Rotate one rollout out, finished as a runner would finish it, so the store sees rollouts end (the
          // SQLite store then lets them leave memory) and the load generator's own state stays a fixed size. The
          // slot turns with each 20-step cycle: `step % own.length` is always the same slot at step 19.
          const slot = Math.floor(step / 20) % own.length;
          const done = own[slot] as Tracked;
          const finished = await postJson(`${url}/v1/agl/rollouts/${done.rid}/attempts/${done.aid}`, {
            status: 'succeeded',
          });
          if (!finished.ok) throw new Error('attempt update refused');
          const fresh = await newRollout(index);
          if (fresh !== null) own[slot] = fresh;
          window.storeMs.push(performance.now() - t0);
        }
      } catch {
        window.errors += 1;
        totals.errors += 1;
      }
    }
  };

  const faults = setInterval(() => {
    if (flaky === null) return;
    flaky.setFault(FAULTS[totals.faults % FAULTS.length] as string, { times: 1 });
    totals.faults += 1;
  }, FAULT_EVERY_MS);

  let restarting: Promise<void> = Promise.resolve();
  const kills = setInterval(() => {
    restarting = restarting.then(async () => {
      if (flaky === null || stopping) return;
      const dying = flaky;
      flaky = null;
      await dying.close();
      totals.kills += 1;
      await new Promise((r) => setTimeout(r, DOWN_S * 1000));
      flaky = await startEngineTwin({ ...TWIN, port: flakyPort });
    });
  }, KILL_EVERY_S * 1000);

  const sample = () => {
    const w = window;
    window = freshWindow();
    gc();
    const memory = process.memoryUsage();
    const minute = (performance.now() - started) / 60_000;
    const stored = totals.chatsAcked + totals.spansAcked + totals.rolloutsAcked + totals.rewardsAcked;
    const taken: Sample = {
      minute,
      rssMb: memory.rss / 2 ** 20,
      heapMb: memory.heapUsed / 2 ** 20,
      fds: openDescriptors(),
      chatP50: percentile(w.chatMs, 50),
      chatP99: percentile(w.chatMs, 99),
      storeP50: percentile(w.storeMs, 50),
      storeP99: percentile(w.storeMs, 99),
      heapPerKWrites: stored === 0 ? Number.NaN : memory.heapUsed / 2 ** 20 / (stored / 1000),
    };
    samples.push(taken);
    const row = [
      minute.toFixed(1),
      taken.rssMb.toFixed(1),
      taken.heapMb.toFixed(1),
      String(taken.fds),
      taken.chatP50.toFixed(1),
      taken.chatP99.toFixed(1),
      taken.storeP50.toFixed(1),
      taken.storeP99.toFixed(1),
      String(w.calls),
      String(w.errors),
      // Whatever the store keeps of these in memory makes heap grow with this count by design; a leak shows as
      // heap growing faster than it (the "heap per 1k stored writes" trend).
      String(stored),
    ];
    rows.push(`| ${row.join(' | ')} |`);
    process.stderr.write(`soak: ${rows[rows.length - 1]}\n`);
  };
  const sampler = setInterval(sample, SAMPLE_S * 1000);

  const workers = Array.from({ length: CONCURRENCY }, (_, i) => worker(i));
  await new Promise((r) => setTimeout(r, Math.max(0, endAt - performance.now())));
  clearInterval(sampler);
  // The last window, unless the interval just took it.
  if (window.calls > 0) sample();
  stopping = true;
  clearInterval(faults);
  clearInterval(kills);
  await Promise.all(workers);
  await restarting;
  await gateway.close();

  // Every acknowledged write, looked up in a fresh gateway on the same file.
  const reopened = await createGateway(config(db, [steady.url]), { logger: silentLogger });
  let lostSpans = 0;
  let lostChats = 0;
  let lostRollouts = 0;
  for (const t of tracked) {
    const rollout = await reopened.store.getRolloutById(t.rid);
    if (rollout === null) {
      lostRollouts += 1;
      continue;
    }
    const spans = await reopened.store.querySpans(t.rid, { limit: 100_000 });
    const ids = new Set(spans.items.map((s) => s.span_id));
    lostSpans += t.spanNumbers.filter((n) => !ids.has(spanIdOf(n))).length;
    const chatSpans = spans.items.filter((s) => s.name !== 'soak-tool' && s.name.startsWith('chat')).length;
    lostChats += Math.max(0, t.chatsAcked - chatSpans);
  }
  await reopened.close();
  await steady.close();
  await (flaky as MockVllm | null)?.close();
  rmSync(dir, { recursive: true, force: true });

  const lost = lostSpans + lostChats + lostRollouts;
  const header = [
    `Soak: ${MINUTES} min, ${CONCURRENCY} agents, ${cpus().length} cores, Node ${process.version}, SQLite store`,
    '',
    '| minute | RSS MB | heap after GC MB | open fds | chat p50 ms | chat p99 ms | store p50 ms | store p99 ms | calls | errors | acknowledged writes so far |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const footer = [
    '',
    `Acknowledged: ${totals.chatsAcked} chat calls, ${totals.spansAcked} span writes, ${totals.rolloutsAcked} rollouts, ` +
      `${totals.rewardsAcked} rewards. Faults injected: ${totals.faults}; backend kills: ${totals.kills}; ` +
      `agent-visible errors: ${totals.errors} of ${totals.calls} calls.`,
    `Lost after reopening the file: ${lost} (spans ${lostSpans}, chat calls ${lostChats}, rollouts ${lostRollouts}).`,
  ];
  const trends = TREND_SERIES.map((series) => ({
    series,
    trend: trendOf(
      samples.map((sample) => ({ minute: sample.minute, value: sample[series.key] })),
      series,
    ),
  }));
  const growing = trends.filter((t) => t.trend !== null && !t.trend.flat).map((t) => t.series.label);
  const trendTable = [
    '',
    'Trends (least-squares fit over the windows after the first; flat = fitted growth over the run within the tolerance):',
    '',
    '| series | slope | fitted start | fitted change over the run | verdict |',
    '|---|---|---|---|---|',
    ...trends.map((t) => trendRow(t.series, t.trend)),
    '',
    `Verdict: ${lost === 0 ? '0 acknowledged writes lost' : `${lost} ACKNOWLEDGED WRITES LOST`}; ` +
      (growing.length === 0 ? 'every series flat.' : `growing: ${growing.join(', ')}.`),
  ];
  const table = [...header, ...rows, ...footer, ...trendTable].join('\n');
  process.stdout.write(`${table}\n`);
  if (OUT !== undefined && OUT !== '') writeFileSync(OUT, `${table}\n`);
  if (lost > 0) process.exitCode = 1;
}

await main();
