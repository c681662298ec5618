// `npm run bench:proxy-recording`: what recording a call costs, measured inside one gateway process. The same
// gateway serves blocks of recorded calls (attributed URL: sequence id, span stored before the last byte) and blocks
// of unrecorded ones (plain /v1 URL), taking turns, so a burst of machine load moves both of a pair; the cost of
// recording is the difference of each pair. bench/proxy.ts compares processes (the floor, peers, stores) and on this
// kind of machine resolves ~20 % at one connection; pairs in one process resolve a few percent.
// It also gives the wall time the event loop spends in each step of a recorded call's way into the store
// (bench/store-step-times.ts), so the cost is split into the codec, the commit and the rest.
//
// Env: BENCH_STORES (default "sqlite,memory"), BENCH_SCENARIOS (name prefixes, as bench/proxy.ts), BENCH_CONNECTIONS
// (default "1,64"), BENCH_BLOCKS (pairs per cell, default 6), BENCH_BLOCK_CALLS (calls per block, default 1500).
// Calls go to rollouts of 16, as in bench/proxy.ts. The gateway runs from dist/ (npm run build first; the npm
// script does).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { ChildStats } from './proxy-child-stats.js';
import {
  ask,
  LOAD_CORE,
  median,
  PROXY_CORE,
  pinned,
  ROOT,
  readLine,
  type Scenario,
  scenarios,
  startMock,
} from './proxy-setup.js';
import { STEPS, type StepTimes } from './store-step-times.js';

const STORES = (process.env.BENCH_STORES ?? 'sqlite,memory').split(',') as Array<'sqlite' | 'memory'>;
const SCENARIO_FILTER = process.env.BENCH_SCENARIOS?.split(',').filter((name) => name !== '') ?? [];
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,64').split(',').map(Number);
const BLOCKS = Math.max(1, Number(process.env.BENCH_BLOCKS ?? 6));
const BLOCK_CALLS = Math.max(100, Number(process.env.BENCH_BLOCK_CALLS ?? 1500));
const CALLS_PER_ROLLOUT = 16;
type StepName = keyof typeof STEPS;
const STEP_NAMES = Object.keys(STEPS) as StepName[];

interface Gateway {
  readonly child: ChildProcess;
  readonly url: string;
  readonly dir: string;
}

async function startGateway(fastUrl: string, storeKind: 'sqlite' | 'memory'): Promise<Gateway> {
  const compiled = join(ROOT, 'dist/bench/proxy-gateway.js');
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run \`npm run build\` first`);
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-recording-'));
  const args = { fastUrl, slowUrl: fastUrl, storePath: join(dir, 'rollgate.db'), storeKind, stepTimes: true };
  const [command, ...rest] = pinned(process.execPath, [compiled, JSON.stringify(args)], PROXY_CORE);
  const child = spawn(command as string, rest, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const match = await readLine(child, /(\{.*"url".*\})\n/);
  child.stdout?.pipe(process.stderr);
  return { child, dir, url: (JSON.parse(match[1] as string) as { url: string }).url };
}

interface Block {
  readonly cpuUsPerCall: number;
  /** µs of loop time per call in each step. */
  readonly steps: Record<StepName, number>;
  readonly errors: number;
}

let blockRuns = 0;

/** BLOCK_CALLS calls over `connections` agents, each starting a new rollout every 16 calls when recorded. */
async function block(gateway: Gateway, scenario: Scenario, connections: number, recorded: boolean): Promise<Block> {
  const run = ++blockRuns;
  const pool = new Pool(gateway.url, { connections, pipelining: 1 });
  let started = 0;
  let errors = 0;
  const agent = async (index: number): Promise<void> => {
    for (let calls = 0; started < BLOCK_CALLS; calls++) {
      started++;
      const rollout = `b${run}-${index}-${Math.floor(calls / CALLS_PER_ROLLOUT)}`;
      const path = recorded ? `/rollout/${rollout}/attempt/a1${scenario.path}` : scenario.path;
      try {
        const response = await pool.request({
          path,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: scenario.body,
        });
        await response.body.dump();
        if (response.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
    }
  };
  const cpuBefore = (await ask<ChildStats>(gateway.child, 'stats')).cpuMs;
  const stepsBefore = await ask<StepTimes>(gateway.child, 'steps');
  await Promise.all(Array.from({ length: connections }, (_, index) => agent(index)));
  const cpuAfter = (await ask<ChildStats>(gateway.child, 'stats')).cpuMs;
  const stepsAfter = await ask<StepTimes>(gateway.child, 'steps');
  await pool.close();
  const perCall = (ms: number) => (ms * 1000) / started;
  const steps = Object.fromEntries(
    STEP_NAMES.map((name) => [name, perCall((stepsAfter[name]?.ms ?? 0) - (stepsBefore[name]?.ms ?? 0))]),
  ) as Record<StepName, number>;
  return { cpuUsPerCall: perCall(cpuAfter - cpuBefore), steps, errors };
}

/** The median of a row's blocks; NaN when there is none (a table cell then reads NaN, not a guess). */
function medianOf(values: readonly number[]): number {
  return median(values) ?? Number.NaN;
}

/** Each pair's recorded minus unrecorded CPU per call: the cost of recording, pair by pair. */
function pairedCosts(row: Row): number[] {
  return row.on.map((b, i) => b.cpuUsPerCall - (row.off[i]?.cpuUsPerCall ?? Number.NaN));
}

interface Row {
  readonly store: string;
  readonly scenario: string;
  readonly connections: number;
  readonly off: readonly Block[];
  readonly on: readonly Block[];
}

async function measure(gateway: Gateway, store: string, scenario: Scenario, connections: number): Promise<Row> {
  // One unmeasured pair: the JIT compiles both paths before anything counts.
  await block(gateway, scenario, connections, true);
  await block(gateway, scenario, connections, false);
  const on: Block[] = [];
  const off: Block[] = [];
  for (let i = 0; i < BLOCKS; i++) {
    // Each pair starts with the other mode than the last, so neither always runs right after the other.
    for (const recorded of i % 2 === 0 ? [true, false] : [false, true]) {
      (recorded ? on : off).push(await block(gateway, scenario, connections, recorded));
    }
  }
  return { store, scenario: scenario.name, connections, on, off };
}

const us = (value: number) => value.toFixed(0);

function costTable(rows: readonly Row[]): string[] {
  const lines = [
    '| store | cell | conns | unrecorded CPU µs/call | recorded CPU µs/call | cost of recording µs/call, paired median (range) | recorded ÷ unrecorded | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const off = medianOf(row.off.map((b) => b.cpuUsPerCall));
    const on = medianOf(row.on.map((b) => b.cpuUsPerCall));
    const paired = pairedCosts(row);
    const errors = [...row.on, ...row.off].reduce((sum, b) => sum + b.errors, 0);
    lines.push(
      `| ${row.store} | ${row.scenario} | ${row.connections} | ${us(off)} | ${us(on)} | ${us(medianOf(paired))} (${us(Math.min(...paired))} to ${us(Math.max(...paired))}) | ${(on / off).toFixed(2)}x | ${errors} |`,
    );
  }
  return lines;
}

function stepTable(rows: readonly Row[]): string[] {
  const lines = [
    `| store | cell | conns | ${STEP_NAMES.join(' | ')} | store steps in all | of the cost of recording |`,
    `|---|---|---:|${STEP_NAMES.map(() => '---:').join('|')}|---:|---:|`,
  ];
  for (const row of rows) {
    const step = (name: StepName) => medianOf(row.on.map((b) => b.steps[name]));
    // The exporter runs addSpan (which runs insertSpan, which runs encode); the commit, the sequence id and a
    // rollout's registration run on their own.
    const total = step('exporter') + step('commit') + step('sequenceId') + step('startRollout');
    const cost = medianOf(pairedCosts(row));
    lines.push(
      `| ${row.store} | ${row.scenario} | ${row.connections} | ${STEP_NAMES.map((name) => us(step(name))).join(' | ')} | ${us(total)} | ${((100 * total) / cost).toFixed(0)} % |`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  spawnSync('taskset', ['-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
  const mock = await startMock(['--tokens-per-chunk', '1']);
  // A conversation cell sends each connection's turns in order; this bench sends one body per cell, so it leaves it out.
  const chosen = scenarios().filter(
    (s) =>
      s.turns === undefined &&
      (SCENARIO_FILTER.length === 0 || SCENARIO_FILTER.some((prefix) => s.name.startsWith(prefix))),
  );
  const rows: Row[] = [];
  try {
    for (const store of STORES) {
      const gateway = await startGateway(mock.url, store);
      try {
        for (const scenario of chosen) {
          for (const connections of CONNECTIONS) {
            const row = await measure(gateway, store, scenario, connections);
            rows.push(row);
            process.stderr.write(`${store} ${scenario.name} ${connections}: done\n`);
          }
        }
      } finally {
        gateway.child.kill('SIGTERM');
        await new Promise((resolve) => gateway.child.once('exit', resolve));
        rmSync(gateway.dir, { recursive: true, force: true });
      }
    }
  } finally {
    mock.child.kill('SIGTERM');
  }
  const out = [
    `One gateway process per store, pinned to core ${PROXY_CORE} (load generator and stand-in on core ${LOAD_CORE}); ${BLOCKS} pairs of blocks of ${BLOCK_CALLS} calls per cell, recorded and unrecorded taking turns. CPU: the process's user + system time (every thread) per call.`,
    '',
    ...costTable(rows),
    '',
    "Loop time per recorded call in the store's steps (µs, median over blocks; nested: exporter ⊃ addSpan ⊃ insertSpan ⊃ encode; commit, sequence id and a rollout's registration apart):",
    '',
    ...stepTable(rows),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

await main();
