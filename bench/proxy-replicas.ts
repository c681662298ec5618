// Scale-out benchmark (`npx tsx bench/proxy-replicas.ts [--pg URL]`, or ROLLGATE_TEST_PG_URL): the same agent
// load through one `rollgate serve` process on the in-memory store (baseline), one on PostgreSQL, then two
// replicas sharing the PostgreSQL store, against the vLLM stand-in. Agents are the official openai SDK, spread
// round-robin over the replicas (what a load balancer does), half of the calls streaming. Reports calls/s and the
// agent-side latency p50/p99 of a whole call, which includes the span write the gateway awaits before the last
// byte. Knobs: ROLLGATE_BENCH_AGENTS (default 64), ROLLGATE_BENCH_SECONDS (default 10), ROLLGATE_BENCH_CLI (see
// serve()).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import pg from 'pg';
import { startMockVllm } from '../test/servers/mock-vllm.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const CLI = join(ROOT, 'src/cli.ts');

interface Replica {
  child: ChildProcess;
  url: string;
  exited: Promise<unknown>;
}

async function serve(options: { cwd: string; storeUrl: string; backend: string }): Promise<Replica> {
  // ROLLGATE_BENCH_CLI: a prebuilt JS entry of the CLI (e.g. an esbuild bundle) instead of src/cli.ts under tsx.
  const entry = process.env.ROLLGATE_BENCH_CLI;
  const runner = entry === undefined ? ['--import', TSX_LOADER, CLI] : [resolve(entry)];
  const args = [...runner, 'serve', '--port', '0', '--store', options.storeUrl];
  args.push('--backend', options.backend, '--model', 'mock-model');
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...process.env, ROLLGATE_LOGGING_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((r) => child.on('exit', r));
  let out = '';
  return new Promise<Replica>((resolveReplica, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'listening' && entry.url) resolveReplica({ child, url: entry.url, exited });
      }
    });
    void exited.then(() => reject(new Error(`rollgate serve exited before listening:\n${out}`)));
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

async function load(options: {
  urls: readonly string[];
  agents: number;
  seconds: number;
  tag: string;
}): Promise<{ callsPerSecond: number; p50: number; p99: number; calls: number }> {
  const latencies: number[] = [];
  const deadline = performance.now() + options.seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: options.agents }, async (_, i) => {
      const base = options.urls[i % options.urls.length] as string;
      const client = new OpenAI({
        baseURL: `${base}/rollout/ro-${options.tag}-${i}/attempt/at-${i}/v1`,
        apiKey: 'bench',
        maxRetries: 0,
      });
      for (let k = 0; performance.now() < deadline; k++) {
        const start = performance.now();
        const messages = [{ role: 'user' as const, content: `agent ${i} call ${k}` }];
        if (k % 2 === 0) {
          const stream = await client.chat.completions.create({
            model: 'mock-model',
            messages,
            max_tokens: 16,
            stream: true,
          });
          for await (const _chunk of stream) void _chunk;
        } else {
          await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 16 });
        }
        latencies.push(performance.now() - start);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((x, y) => x - y);
  return {
    callsPerSecond: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    calls: latencies.length,
  };
}

async function main(): Promise<void> {
  const index = process.argv.indexOf('--pg');
  const pgUrl = index >= 0 ? process.argv[index + 1] : process.env.ROLLGATE_TEST_PG_URL;
  if (pgUrl === undefined) {
    process.stderr.write('bench/proxy-replicas.ts: pass --pg postgres://... or set ROLLGATE_TEST_PG_URL\n');
    process.exitCode = 2;
    return;
  }
  const agents = Number(process.env.ROLLGATE_BENCH_AGENTS ?? '64');
  const seconds = Number(process.env.ROLLGATE_BENCH_SECONDS ?? '10');
  const schema = `rollgate_bench_proxy_${randomBytes(3).toString('hex')}`;
  const storeUrl = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}schema=${schema}`;
  const cwd = mkdtempSync(join(tmpdir(), 'rollgate-bench-replicas-'));
  const mock = await startMockVllm({
    model: 'mock-model',
    anyModel: true,
    latencyMs: 5,
    ttftMs: 5,
    interTokenMs: 1,
    maxRecordedRequests: 100,
  });
  const replicas: Replica[] = [];
  const rows = [
    '| store | replicas | agents | calls | calls/s | call p50 (ms) | call p99 (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  try {
    // Two replicas on PostgreSQL, plus one on the in-memory store as the baseline without any database.
    replicas.push(
      ...(await Promise.all([
        serve({ cwd, storeUrl, backend: mock.url }),
        serve({ cwd, storeUrl, backend: mock.url }),
        serve({ cwd, storeUrl: 'memory', backend: mock.url }),
      ])),
    );
    const [first, second, baseline] = replicas as [Replica, Replica, Replica];
    // Warm-up: JIT, connection pools, the schema's first pages.
    await load({ urls: replicas.map((r) => r.url), agents: 12, seconds: 2, tag: 'warm' });
    const runs = [
      { store: 'memory', urls: [baseline.url] },
      { store: 'postgres', urls: [first.url] },
      { store: 'postgres', urls: [first.url, second.url] },
    ];
    for (const [i, run] of runs.entries()) {
      const result = await load({ urls: run.urls, agents, seconds, tag: `run${i}` });
      rows.push(
        `| ${run.store} | ${run.urls.length} | ${agents} | ${result.calls} | ${Math.round(result.callsPerSecond)} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} |`,
      );
    }
  } finally {
    for (const replica of replicas) {
      replica.child.kill('SIGTERM');
      await replica.exited;
    }
    await mock.close();
    rmSync(cwd, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  process.stdout.write(`${rows.join('\n')}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
