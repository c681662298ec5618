// APO round cost on the room-booking example: wall time per round with candidates evaluated 16 at a time
// (rollgate) versus one batch at a time (the original's sequential loop), and the gateway + store + runner
// overhead per round measured with an instant model.
//
//   npx tsx bench/apo.ts [--latency-ms 50] [--rounds 2] [--runner-concurrency 64]
//
// The agent model sleeps `latency-ms` per call (a GPU's worth of waiting); the optimizer answers in
// latency/2. Everything else is real: gateway on a socket, openai SDK agents, in-process runner, memory store.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROMPT_RESOURCE_NAME, roomAgent, SEED_PROMPT } from '../examples/apo-room-booking/room-booking.js';
import { createStoreOnlyGatewayControl } from '../src/algorithms/gateway-control.js';
import { startAlgorithms } from '../src/algorithms/start.js';
import { silentLogger } from '../src/logger.js';
import { createRunner } from '../src/runner/index.js';
import { startTestGateway } from '../test/helpers/gateway.js';
import { startOptimizerModel, startRoomModel } from '../test/servers/apo-models.js';

const EXAMPLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../examples/apo-room-booking');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(value) ? value : fallback;
}

interface RoundStat {
  round: number;
  duration_s: number;
}

interface RunStat {
  label: string;
  concurrency: number;
  latencyMs: number;
  totalS: number;
  rounds: RoundStat[];
  rollouts: number;
  evaluations: number;
  optimizerCalls: number;
  modelCalls: number;
  bestScore: number;
  /** Mean time of one agent LLM call through the gateway, minus the model's own latency. */
  gatewayMsPerCall: number;
}

async function runOnce(options: {
  label: string;
  concurrency: number;
  latencyMs: number;
  rounds: number;
  runnerConcurrency: number;
}): Promise<RunStat> {
  const [agentModel, optimizer] = await Promise.all([startRoomModel(), startOptimizerModel()]);
  agentModel.setLatencyMs(options.latencyMs);
  optimizer.setLatencyMs(options.latencyMs / 2);
  const gw = await startTestGateway({
    models: [{ name: 'room-model', backends: [{ url: agentModel.url, type: 'openai' }], health: { intervalMs: 0 } }],
  });
  // Time inside the agent = one openai-SDK call through the gateway (model latency included).
  const agent = roomAgent({ model: 'room-model' });
  let agentMs = 0;
  const runner = createRunner({
    store: gw.gateway.store,
    gatewayUrl: gw.url,
    agent: async (task, ctx) => {
      const t0 = performance.now();
      try {
        return await agent(task, ctx);
      } finally {
        agentMs += performance.now() - t0;
      }
    },
    concurrency: options.runnerConcurrency,
    backoff: { initialMs: 20, maxMs: 100 },
    logger: silentLogger,
  });
  const reportDir = await mkdtemp(join(tmpdir(), 'rollgate-bench-apo-'));
  try {
    const started = performance.now();
    const handle = startAlgorithms(
      [
        {
          use: 'apo',
          options: {
            optimizer: { baseUrl: optimizer.url, apiKey: 'bench' },
            seedPrompt: SEED_PROMPT,
            promptResourceName: PROMPT_RESOURCE_NAME,
            beamRounds: options.rounds,
            beamWidth: 4,
            branchFactor: 4,
            gradientBatchSize: 4,
            valBatchSize: 8,
            concurrency: options.concurrency,
            seed: 11,
          },
          data: { train: 'train.jsonl', val: 'val.jsonl' },
        },
      ],
      {
        store: gw.gateway.store,
        gateway: createStoreOnlyGatewayControl({ gatewayUrl: gw.url }),
        logger: silentLogger,
        baseDir: EXAMPLE_DIR,
        reportDir,
        progressOutput: { write: () => true },
      },
    );
    const [outcome] = await handle.done;
    const totalS = (performance.now() - started) / 1000;
    if (outcome?.status !== 'succeeded') throw new Error(`apo ${outcome?.status}: ${outcome?.error}`);
    const report = JSON.parse(await readFile(outcome.reportPath ?? '', 'utf8'));
    const r = report.result;
    return {
      label: options.label,
      concurrency: options.concurrency,
      latencyMs: options.latencyMs,
      totalS,
      rounds: r.rounds.map((x: RoundStat) => ({ round: x.round, duration_s: x.duration_s })),
      rollouts: r.rollouts.total,
      evaluations: r.evaluations,
      optimizerCalls: r.optimizer_calls,
      modelCalls: agentModel.calls(),
      bestScore: r.best.score,
      gatewayMsPerCall: agentMs / Math.max(1, agentModel.calls()) - options.latencyMs,
    };
  } finally {
    await runner.close({ graceMs: 0 });
    await gw.close();
    await Promise.all([agentModel.close(), optimizer.close()]);
    await rm(reportDir, { recursive: true, force: true });
  }
}

const latencyMs = arg('latency-ms', 50);
const rounds = arg('rounds', 2);
const runnerConcurrency = arg('runner-concurrency', 32);
const runs: RunStat[] = [];
for (const [label, concurrency, latency] of [
  ['concurrent (16)', 16, latencyMs],
  ['sequential (1)', 1, latencyMs],
  ['overhead: concurrent, instant model', 16, 0],
  ['overhead: sequential, instant model', 1, 0],
] as const) {
  runs.push(await runOnce({ label, concurrency, latencyMs: latency, rounds, runnerConcurrency }));
}
console.log(
  `APO on the room-booking example: beam 4 x branch 4, val batch 8, ${rounds} rounds, runner ${runnerConcurrency} slots`,
);
console.log(
  'run | model latency | total s | per round s | rollouts | model calls | evaluations | optimizer calls | ms/rollout | gateway ms/call | best',
);
for (const r of runs) {
  const perRound = r.rounds.map((x) => x.duration_s.toFixed(2)).join(' / ');
  const msPerRollout = ((r.totalS * 1000) / Math.max(1, r.rollouts)).toFixed(2);
  console.log(
    `${r.label} | ${r.latencyMs} ms | ${r.totalS.toFixed(2)} | ${perRound} | ${r.rollouts} | ${r.modelCalls} | ${r.evaluations} | ${r.optimizerCalls} | ${msPerRollout} | ${r.gatewayMsPerCall.toFixed(2)} | ${r.bestScore}`,
  );
}
