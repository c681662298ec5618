// `tsx bench/proxy-failover.ts`: model-pool fail-over under load (docs/routing.md, benchmark). One model pool
// of 8 vLLM stand-ins behind the gateway; 32 concurrent agents (plain HTTP, no client retries, so every error the
// gateway lets through is counted). Two runs of the same length: all backends healthy, then one backend killed
// every few seconds (it comes back on the same port a second later, like a restarted vLLM). Reports the
// agent-visible error rate (target 0 for non-stream calls), p50/p99 latency and throughput against the healthy
// run; a stream run shows what cannot be retried (a stream cut after its first byte).
//
// Everything runs in this process (gateway, stand-ins, load), so absolute numbers are loopback-and-one-core
// numbers; the comparison between the two runs is what this measures.
// Env: BENCH_SECONDS (per run, default 10), BENCH_KILL_EVERY_MS (2000), BENCH_CONCURRENCY (32).
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { configSchema } from '../config/schema.js';
import { createGateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import { type MockVllm, startMockVllm } from '../test/servers/mock-vllm.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const KILL_EVERY_MS = Number(process.env.BENCH_KILL_EVERY_MS ?? 2_000);
const DOWN_MS = 1_000;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const BACKENDS = 8;
const MOCK = { latencyMs: 20, interTokenMs: 2, ttftMs: 10 };

interface RunResult {
  readonly name: string;
  readonly calls: number;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly perSecond: number;
  readonly kills: number;
}

let runs = 0;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function run(options: { name: string; failing: boolean; stream: boolean }): Promise<RunResult> {
  const mocks: Array<MockVllm | null> = [];
  for (let i = 0; i < BACKENDS; i += 1) mocks.push(await startMockVllm(MOCK));
  const ports = mocks.map((m) => m?.port ?? 0);
  const config = configSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    store: { kind: 'memory' },
    logging: { level: 'silent' },
    models: [
      {
        name: 'mock-model',
        backends: mocks.map((m) => ({ url: m?.url ?? '' })),
        retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
        timeouts: { connectMs: 500 },
        health: { intervalMs: 500 },
      },
    ],
  });
  const gateway = await createGateway(config, { logger: silentLogger });
  const { url } = await gateway.listen();
  const agents = new Pool(url, { connections: CONCURRENCY });
  const body = JSON.stringify({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'benchmark' }],
    max_tokens: 8,
    stream: options.stream,
  });

  let kills = 0;
  let victim = 0;
  const timers = new Set<NodeJS.Timeout>();
  const killer = options.failing
    ? setInterval(() => {
        const index = victim % BACKENDS;
        victim += 1;
        const mock = mocks[index];
        if (mock === null || mock === undefined) return;
        mocks[index] = null;
        kills += 1;
        void mock.close().then(() => {
          const back = setTimeout(() => {
            timers.delete(back);
            void startMockVllm({ ...MOCK, port: ports[index] }).then((restarted) => {
              mocks[index] = restarted;
            });
          }, DOWN_MS);
          timers.add(back);
        });
      }, KILL_EVERY_MS)
    : null;

  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + SECONDS * 1000;
  runs += 1;
  const runId = runs;
  const worker = async (id: number) => {
    while (performance.now() < deadline) {
      const started = performance.now();
      try {
        const response = await agents.request({
          path: `/rollout/bench-${runId}-${id}/attempt/a1/v1/chat/completions`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const text = await response.body.text();
        const ok = response.statusCode === 200 && (!options.stream || text.includes('[DONE]'));
        if (ok && !text.includes('"error"')) latencies.push(performance.now() - started);
        else errors += 1;
      } catch {
        errors += 1;
      }
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => worker(i)));
  const elapsedS = (performance.now() - began) / 1000;
  if (killer !== null) clearInterval(killer);
  for (const timer of timers) clearTimeout(timer);
  await agents.close();
  await gateway.close();
  await Promise.all(mocks.map((m) => m?.close()));
  latencies.sort((a, b) => a - b);
  return {
    name: options.name,
    calls: latencies.length + errors,
    errors,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    perSecond: latencies.length / elapsedS,
    kills,
  };
}

/** The fail-over scenario: healthy vs one backend killed every few seconds, non-stream and stream. */
export async function failoverScenario(): Promise<RunResult[]> {
  const results: RunResult[] = [];
  // JIT and socket pools warm up here, so the healthy baseline is not charged with them.
  await run({ name: 'warm-up', failing: false, stream: false });
  results.push(await run({ name: 'non-stream, 8 healthy', failing: false, stream: false }));
  results.push(await run({ name: 'non-stream, 1 killed every 2 s', failing: true, stream: false }));
  results.push(await run({ name: 'stream, 8 healthy', failing: false, stream: true }));
  results.push(await run({ name: 'stream, 1 killed every 2 s', failing: true, stream: true }));
  return results;
}

function fmt(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

async function main(): Promise<void> {
  const results = await failoverScenario();
  console.log(
    `\n### Pool fail-over: ${BACKENDS} backends, ${CONCURRENCY} agents, ${SECONDS} s per run, kill every ${KILL_EVERY_MS} ms (down ${DOWN_MS} ms)\n`,
  );
  console.log('| run | calls | agent-visible errors | error rate | p50 ms | p99 ms | calls/s | kills |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const rate = r.calls === 0 ? 0 : (100 * r.errors) / r.calls;
    console.log(
      `| ${r.name} | ${r.calls} | ${r.errors} | ${fmt(rate, 3)} % | ${fmt(r.p50Ms)} | ${fmt(r.p99Ms)} | ${fmt(r.perSecond, 0)} | ${r.kills} |`,
    );
  }
  const [healthy, failing] = results;
  if (healthy !== undefined && failing !== undefined) {
    console.log(
      `\nNon-stream: added p99 from fail-over ${fmt(failing.p99Ms - healthy.p99Ms)} ms; throughput ${fmt((100 * failing.perSecond) / healthy.perSecond, 0)} % of healthy.`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
