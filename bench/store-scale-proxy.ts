// Proxied-call latency on a store holding N rollouts against an empty one, for the growth benchmark
// (bench/store-scale.ts). Two real gateway processes (bench/proxy-gateway.ts, the proxy benchmark's, on SQLite) run
// side by side in front of one vLLM stand-in, one on the benchmark's file and one on a new empty file; an `openai`
// SDK agent sends the same attributed calls (a new rollout every 4 calls, the gateway creating it as an agent's
// first call does) to each in turn, a round at a time, alternating which goes first, so both see the same load.
// Phases: one call at a time (one connection), then 4 agents at once.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChildStats } from './proxy-child-stats.js';

const CALLS_PER_ROLLOUT = 4;

interface GatewayChild {
  readonly url: string;
  readonly child: ChildProcess;
}

export interface LatencyCell {
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The gateway process's worst event-loop delay over the phase. */
  readonly loopMaxMs: number;
}

export interface LatencyPhase {
  readonly concurrency: number;
  readonly calls: number;
  readonly full: LatencyCell;
  readonly empty: LatencyCell;
}

export interface ProxyLatencyOptions {
  /** The store file at N rollouts (closed: the gateway opens it). */
  readonly storePath: string;
  /** The vLLM stand-in's `/v1` URL. */
  readonly upstreamUrl: string;
  /** Rounds per phase (each sends `callsPerRound` calls to each gateway). */
  readonly rounds: number;
  readonly callsPerRound: number;
  /** Prefix of the rollout ids the calls create, so two runs on one file never collide. */
  readonly label: string;
}

function startGateway(storePath: string, upstreamUrl: string): Promise<GatewayChild> {
  const script = join(import.meta.dirname, 'proxy-gateway.ts');
  const args = JSON.stringify({ fastUrl: upstreamUrl, slowUrl: upstreamUrl, storePath });
  const child = spawn(process.execPath, ['--import', 'tsx', script, args], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString();
      const match = /(\{.*"url".*\})\n/.exec(buffer);
      if (match === null) return;
      child.stdout?.off('data', onData);
      // Later output (warnings) goes on, so a full pipe never blocks the gateway.
      child.stdout?.pipe(process.stderr);
      child.off('exit', onExit);
      resolve({ url: (JSON.parse(match[1] as string) as { url: string }).url, child });
    };
    const onExit = (code: number | null): void => reject(new Error(`gateway exited (${code}) before listening`));
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise<T>((resolve) => {
    child.once('message', (answer) => resolve(answer as T));
    child.send(message);
  });
}

async function stopGateway(gateway: GatewayChild): Promise<void> {
  const exited = new Promise<void>((resolve) => gateway.child.once('exit', () => resolve()));
  gateway.child.send('close');
  await exited;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Side {
  readonly gateway: GatewayChild;
  readonly client: OpenAI;
  readonly latencies: number[];
  calls: number;
}

async function call(side: Side, label: string): Promise<void> {
  const n = side.calls++;
  const rollout = `${label}-${Math.floor(n / CALLS_PER_ROLLOUT)}`;
  const started = performance.now();
  await side.client.chat.completions.create(
    { model: 'mock-model', messages: [{ role: 'user', content: `hello ${n}` }], max_tokens: 8 },
    { headers: { 'x-rollout-id': rollout, 'x-attempt-id': `${rollout}-a1` } },
  );
  side.latencies.push(performance.now() - started);
}

async function round(side: Side, options: { label: string; calls: number; concurrency: number }): Promise<void> {
  let left = options.calls;
  const agent = async (): Promise<void> => {
    while (left > 0) {
      left--;
      await call(side, options.label);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, agent));
}

async function cell(side: Side): Promise<LatencyCell> {
  const sorted = [...side.latencies].sort((a, b) => a - b);
  const stats = await ask<ChildStats>(side.gateway.child, 'stats');
  return { p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), loopMaxMs: stats.loopDelayMaxMs };
}

/** Measures both gateways, phase by phase; the empty store's file is removed afterwards. */
export async function measureProxyLatency(options: ProxyLatencyOptions): Promise<LatencyPhase[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-store-scale-empty-'));
  const gateways = await Promise.all([
    startGateway(options.storePath, options.upstreamUrl),
    startGateway(join(dir, 'empty.db'), options.upstreamUrl),
  ]);
  const [full, empty] = gateways.map((gateway) => ({
    gateway,
    client: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'bench', maxRetries: 0 }),
    latencies: [] as number[],
    calls: 0,
  })) as [Side, Side];
  try {
    const phases: LatencyPhase[] = [];
    for (const concurrency of [1, 4]) {
      const label = `${options.label}-c${concurrency}`;
      // Warm-up: connections, JIT, the first statements of each store.
      for (const side of [full, empty]) await round(side, { label: `${label}-warm`, calls: 50, concurrency });
      for (const side of [full, empty]) {
        side.latencies.length = 0;
        await ask<string>(side.gateway.child, 'reset');
      }
      for (let r = 0; r < options.rounds; r++) {
        const order = r % 2 === 0 ? [full, empty] : [empty, full];
        for (const side of order) await round(side, { label, calls: options.callsPerRound, concurrency });
      }
      phases.push({
        concurrency,
        calls: options.rounds * options.callsPerRound,
        full: await cell(full),
        empty: await cell(empty),
      });
    }
    return phases;
  } finally {
    await Promise.all(gateways.map(stopGateway));
    rmSync(dir, { recursive: true, force: true });
  }
}
