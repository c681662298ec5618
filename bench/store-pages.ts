// List-page benchmark (`npx tsx bench/store-pages.ts [rollouts]`): a gateway on a real socket over a store holding
// N finished and queued rollouts; times the list routes a trainer and the dashboard poll, and the worst event-loop
// stall while each is served (a stall delays every proxied call on the same process).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { configSchema } from '../config/schema.js';
import { createGateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import type { EnqueueRolloutRequest, LightningStore } from '../src/store/core/types.js';
import { MemoryStore } from '../src/store/memory/memory.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';

const N = Number(process.argv[2] ?? 100_000);
const KIND = process.argv[3] === 'sqlite' ? 'sqlite' : 'memory';
const BATCH = 5_000;
const RUNS = 5;

const ROUTES = [
  '/api/rollouts?state_in=queuing&state_in=running',
  '/api/rollouts?state_in=succeeded',
  '/api/rollouts/terminal?after=0&limit=5000',
  '/v1/agl/rollouts',
  '/v1/agl/rollouts?status_in=succeeded&limit=100&offset=50000',
  '/v1/agl/rollouts?limit=100&sort_by=start_time&sort_order=desc',
];

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-'));
  const store: LightningStore =
    KIND === 'sqlite' ? new SqliteStore({ path: join(dir, 'store.db') }) : new MemoryStore();
  for (let i = 0; i < N; i += BATCH) {
    const requests: EnqueueRolloutRequest[] = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++)
      requests.push({ input: { data_id: `d${j}`, prompt: 'x'.repeat(200) } });
    const queued = await store.enqueueManyRollouts(requests);
    // Most of a training run's history is finished rollouts; keep the last 1 % queued.
    if (i + BATCH < N * 0.99) {
      await Promise.all(queued.map((r) => store.updateRollout(r.rollout_id, { status: 'succeeded' })));
    }
  }
  const config = configSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    store: { kind: 'memory' },
    logging: { level: 'silent' },
  });
  const gateway = await createGateway(config, { logger: silentLogger, store });
  const { url } = await gateway.listen();
  console.log(
    `| route (${N} rollouts, ${KIND}) | status | items | bytes | median latency ms | its CPU ms | max event-loop delay ms (5 runs) |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const route of ROUTES) {
    // Median of a few runs: the first pays for JIT warm-up, and the box is shared.
    const runs: Array<{ ms: number; cpuMs: number; loopMs: number; status: number; items: number; bytes: number }> = [];
    for (let run = 0; run < RUNS; run++) {
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const started = performance.now();
      // CPU time as well as wall time: on a shared machine the wall time also counts time the process waited for
      // a core.
      const cpu = process.cpuUsage();
      const response = await fetch(url + route);
      const text = await response.text();
      const ms = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const cpuMs = (used.user + used.system) / 1000;
      loop.disable();
      const body: unknown = JSON.parse(text);
      const items = Array.isArray(body) ? body.length : ((body as { items?: unknown[] }).items?.length ?? 0);
      runs.push({ ms, cpuMs, loopMs: loop.max / 1e6, status: response.status, items, bytes: text.length });
    }
    runs.sort((x, y) => x.ms - y.ms);
    const mid = runs[Math.floor(runs.length / 2)] as (typeof runs)[number];
    const worstLoop = Math.max(...runs.map((r) => r.loopMs));
    console.log(
      `| \`${route}\` | ${mid.status} | ${mid.items} | ${mid.bytes} | ${mid.ms.toFixed(1)} | ${mid.cpuMs.toFixed(1)} | ${worstLoop.toFixed(1)} |`,
    );
  }
  await gateway.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
