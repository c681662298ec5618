// `npm run bench:soak`: a long mixed-traffic run against one gateway on a SQLite store, looking for what only
// time shows: memory or descriptors that grow, latency that drifts, writes that go missing. Traffic: attributed
// chat calls (stream and non-stream, the official openai SDK as the agent), store API writes (spans, rewards,
// new rollouts), twin faults (503s, a stream cut after its first chunks, slow first bytes, a hang) on one of two
// backends, and that backend killed and restarted on its port every few minutes. Each sampling window reports
// RSS, heap after a full GC, open descriptors, p50/p99 latency of chat calls and store writes, and calls/errors.
// At the end the gateway is closed, the SQLite file reopened by a fresh gateway, and every acknowledged write is
// looked up there: `lost` must be 0.
//
// Everything runs in this process (gateway, twins, agents), so RSS and heap include the load generator, whose own
// state is bounded (a fixed set of rollouts and counters). Run with `--expose-gc` (the npm script does).
// Env: SOAK_MINUTES (default 30), SOAK_SAMPLE_SECONDS (60), SOAK_CONCURRENCY (8), SOAK_KILL_EVERY_S (180),
// SOAK_OUT (also write the markdown table to this file).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import { configSchema } from '../config/schema.js';
import { createGateway, type Gateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import { type MockVllm, startEngineTwin } from '../test/servers/mock-vllm.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_SECONDS ?? 60);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 8);
const KILL_EVERY_S = Number(process.env.SOAK_KILL_EVERY_S ?? 180);
const DOWN_S = 5;
const ROLLOUTS_PER_WORKER = 4;
const TWIN = { latencyMs: 5, ttftMs: 5, interTokenMs: 1 };
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
  readonly spanIds: string[];
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
  const started = performance.now();
  const endAt = started + MINUTES * 60_000;
  let stopping = false;

  const newRollout = async (worker: number): Promise<Tracked | null> => {
    const created = await postJson(`${url}/v1/agl/rollouts`, { input: { worker }, mode: 'train' });
    if (!created.ok) return null;
    totals.rolloutsAcked += 1;
    const t: Tracked = { ...idsOf(created.body), chatsAcked: 0, spanIds: [] };
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
          const spanId = spanCounter.toString(16).padStart(16, '0');
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
          target.spanIds.push(spanId);
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
          // Rotate one rollout out: the load generator's own state stays a fixed size.
          const fresh = await newRollout(index);
          if (fresh !== null) own[step % own.length] = fresh;
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
    const minute = ((performance.now() - started) / 60_000).toFixed(1);
    const row = [
      minute,
      (memory.rss / 2 ** 20).toFixed(1),
      (memory.heapUsed / 2 ** 20).toFixed(1),
      String(openDescriptors()),
      percentile(w.chatMs, 50).toFixed(1),
      percentile(w.chatMs, 99).toFixed(1),
      percentile(w.storeMs, 50).toFixed(1),
      percentile(w.storeMs, 99).toFixed(1),
      String(w.calls),
      String(w.errors),
      // The store keeps every rollout and span in memory (SQLite is its durable copy), so heap grows with this
      // count by design; a leak shows as heap growing faster than it.
      String(totals.chatsAcked + totals.spansAcked + totals.rolloutsAcked + totals.rewardsAcked),
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
    lostSpans += t.spanIds.filter((id) => !ids.has(id)).length;
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
  const table = [...header, ...rows, ...footer].join('\n');
  process.stdout.write(`${table}\n`);
  if (process.env.SOAK_OUT) writeFileSync(process.env.SOAK_OUT, `${table}\n`);
  if (lost > 0) process.exitCode = 1;
}

await main();
