// `npm run bench:proxy`: the gateway against a direct connection to the vLLM stand-in and (when installed)
// nginx as a plain pass-through proxy, on loopback. Scenarios: small non-stream, 16-chunk stream, 100 KB
// request, and an agentic conversation (30 turns, each re-sending the whole history, ~200 KB by the last turn, one
// rollout per conversation); 1 and 64 connections; gateway recording on (attributed URL: sequence id + span in the store)
// and off (un-prefixed URL). The proxy under test is pinned to core 0 (`taskset`); the load generator and
// the stand-in share core 1. Prints markdown tables; every number is also given as a ratio to nginx.
//
// A bare Node pass-through (bench/proxy-floor.ts: node:http server piping to a keep-alive node:http client) runs
// beside them in every run: the floor. The gateway runs on the default store (SQLite, in a temporary file); the
// gateway and the floor report their event-loop delay (max, p99) during each cell, so a store stall shows.
//
// Agent view (docs/agent-view.md): the scenario "16-chunk stream (agent's own body)" sends what an agent sends (no
// token ids, no logprobs, no usage asked for), so the gateway injects them and cuts them out of every chunk. The
// same gateway process also serves it as `raw-model` (`agentView: 'raw'`, nothing cut), measured in the same rounds;
// a last table gives the agent view's cost as a ratio to that raw relay.
//
// Recorded calls go to rollouts of BENCH_CALLS_PER_ROLLOUT calls (16; each connection is an agent starting a new
// rollout after that many, as RL episodes do; 0: one rollout for the whole run). A second gateway process on the
// memory store runs as `gateway (recording on, memory store)`: what the SQLite store adds, in CPU and in event-loop
// delay, is the difference between the two.
//
// Env: BENCH_SECONDS (per cell, default 2), BENCH_WARMUP_SECONDS (0.3, before each cell), BENCH_WARM_SECONDS (1.5,
// per target and scenario before round 1: the JIT's compiling is not measured), BENCH_STREAMS (RSS phase, 256; 0 skips
// it), BENCH_SCENARIOS (comma-separated name prefixes, e.g. "small,100"), BENCH_CONNECTIONS (e.g. "64"),
// BENCH_PROFILE_DIR (the gateway writes a CPU profile there), BENCH_TARGETS (comma-separated name prefixes; the floor always runs), BENCH_ROUNDS (default 3): every cell is measured once per round, targets taking turns within a round (each round starting one target later), and the
// table shows each number's median over the rounds, so a burst of noise on a shared machine moves one sample of
// one target rather than a whole ratio.
// BENCH_BEFORE_ROOT (a directory holding another built copy of the project, e.g. the tree before a change, with its
// own `dist/`): its gateway runs beside this one as `gateway before (recording on)`, in the same rounds, and a last
// table compares the two, so an A/B of a change is measured in one run on one machine load.
// BENCH_PORTKEY (default 1; 0 skips it): Portkey's gateway, the TypeScript peer (bench/proxy-peer-portkey.ts),
// installed from its own lock file on the first run and measured like nginx (CPU from /proc, no loop delay); a
// table gives its CPU per call as a multiple of the gateway's.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { freePort } from '../test/helpers/free-port.js';
import type { ChildStats } from './proxy-child-stats.js';
import { type PortkeyPeer, portkeyPeer } from './proxy-peer-portkey.js';
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
  which,
} from './proxy-setup.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 0.3);
const RSS_STREAMS = Number(process.env.BENCH_STREAMS ?? 256);
const SCENARIO_FILTER = process.env.BENCH_SCENARIOS?.split(',').filter((name) => name !== '') ?? [];
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,64').split(',').map(Number);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const TARGET_FILTER = process.env.BENCH_TARGETS?.split(',').filter((name) => name !== '') ?? [];
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;
const PORTKEY = process.env.BENCH_PORTKEY !== '0';
/** Unmeasured load per target and scenario before the first round, so no round measures the JIT compiling. */
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 1.5);
/**
 * Recorded calls per rollout: each connection is one agent that starts a new rollout after this many calls, as an
 * RL run's episodes do. 0 sends every call of the run to one rollout (the shape before: one rollout of ~10^5 spans,
 * whose per-rollout state then dominates).
 */
const CALLS_PER_ROLLOUT = Number(process.env.BENCH_CALLS_PER_ROLLOUT ?? 16);
/**
 * BENCH_FINISH_ROLLOUTS=1: an agent ends each rollout as an RL episode does (its attempt marked succeeded through
 * the store API) before it starts the next one, and that request counts in the gateway's CPU per call. Off by
 * default, so figures stay comparable with earlier runs: rollouts then stay running, their state in the store's
 * memory until evicted (which, measured, is not what drives the gateway's old-space growth).
 */
const FINISH_ROLLOUTS = process.env.BENCH_FINISH_ROLLOUTS === '1';
/** Streams that must be open (first chunk received) before RSS is read. */
const RSS_READY_FRACTION = 0.9;
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim() || 100);
const GATEWAY_ON = 'gateway (recording on)';
const GATEWAY_OFF = 'gateway (recording off)';
const FLOOR = 'bare node:http pipe';
const GATEWAY_ON_RAW = "gateway (recording on, agentView 'raw')";
const GATEWAY_BEFORE = 'gateway before (recording on)';
const GATEWAY_MEMORY = 'gateway (recording on, memory store)';

interface Target {
  readonly name: string;
  readonly base: string;
  /** Path prefix of the slow (in-flight stream) route. */
  readonly slowPrefix: string;
  readonly slowModel: string;
  /** Sent as the body's `model` instead of the scenario's (a pool of the same backend with other settings). */
  readonly model?: string;
  /** Attributed calls: `base` is the origin, each call goes to `/rollout/<id>/attempt/a1` (CALLS_PER_ROLLOUT). */
  readonly recorded?: boolean;
  /** Sent with every call besides the content type (a peer told where to forward it). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly pid: number | null;
  cpuMs(): Promise<number>;
  rssBytes(): Promise<number>;
  /** Starts a new event-loop delay window (Node targets only). */
  resetLoopDelay(): Promise<void>;
  /** The event-loop delay since the last reset, in ms; null for targets that are not Node processes. */
  loopDelayMs(): Promise<{ max: number; p99: number; gcMax: number } | null>;
}

interface Cell {
  scenario: string;
  connections: number;
  target: string;
  rps: number;
  p50: number;
  p99: number;
  ttfbP50: number | null;
  ttfbP99: number | null;
  cpuMsPerReq: number | null;
  loopDelayMaxMs: number | null;
  loopDelayP99Ms: number | null;
  gcPauseMaxMs: number | null;
  errors: number;
}

function procCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // utime and stime are fields 14 and 15 of /proc/<pid>/stat (11 and 12 after the comm field).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

function procRss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/**
 * Runs a Node proxy from its compiled JavaScript (`npm run build` puts it under dist/, as `npm start` runs the
 * gateway): under tsx, its transpiler's helpers would run on every call and be measured as gateway cost.
 */
function startNodeProxy(
  script: string,
  args: object,
  root: string = ROOT,
): { child: ChildProcess; ready: Promise<string> } {
  const compiled = join(root, 'dist', script.replace(/\.ts$/, '.js'));
  if (!existsSync(compiled))
    throw new Error(`${compiled} is missing: run \`npm run build\` first (npm run bench:proxy does)`);
  // BENCH_PROFILE_DIR: the gateway writes a V8 CPU profile there when it exits (`node --cpu-prof`).
  const profile =
    PROFILE_DIR !== undefined && script.endsWith('gateway.ts') ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const [command, ...rest] = pinned(process.execPath, [...profile, compiled, JSON.stringify(args)], PROXY_CORE);
  const child = spawn(command as string, rest, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const ready = readLine(child, /(\{.*"url".*\})\n/).then((match) => {
    // Anything it logs later (warnings) goes on, so a full pipe never blocks the process under test.
    child.stdout?.pipe(process.stderr);
    return (JSON.parse(match[1] as string) as { url: string }).url;
  });
  return { child, ready };
}

function nodeTarget(child: ChildProcess, name: string, base: string, slowModel: string): Target {
  const stats = () => ask<ChildStats>(child, 'stats');
  return {
    name,
    base,
    slowPrefix: base,
    slowModel,
    pid: child.pid ?? null,
    cpuMs: async () => (await stats()).cpuMs,
    rssBytes: async () => (await stats()).rss,
    resetLoopDelay: async () => {
      await ask<string>(child, 'reset');
    },
    loopDelayMs: async () => {
      const { loopDelayMaxMs, loopDelayP99Ms, gcPauseMaxMs } = await stats();
      return { max: loopDelayMaxMs, p99: loopDelayP99Ms, gcMax: gcPauseMaxMs };
    },
  };
}

const NOT_NODE = { resetLoopDelay: async () => {}, loopDelayMs: async () => null } as const;

async function startGateway(
  fastUrl: string,
  slowUrl: string,
  options: { readonly root?: string; readonly storeKind?: 'sqlite' | 'memory' } = {},
): Promise<{ child: ChildProcess; target: Target; on: Target; onRaw: Target; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-store-'));
  const storePath = join(dir, 'rollgate.db');
  const storeKind = options.storeKind ?? 'sqlite';
  const { child, ready } = startNodeProxy(
    'bench/proxy-gateway.ts',
    { fastUrl, slowUrl, storePath, storeKind },
    options.root,
  );
  const url = await ready;
  const on: Target = {
    ...nodeTarget(child, GATEWAY_ON, url, 'slow-model'),
    recorded: true,
    slowPrefix: `${url}/rollout/bench-rss/attempt/a1`,
  };
  return {
    child,
    dir,
    target: nodeTarget(child, GATEWAY_OFF, url, 'slow-model'),
    on,
    // Same process as `on`: its RSS phase would measure the same thing again.
    onRaw: { ...on, name: GATEWAY_ON_RAW, model: 'raw-model', slowPrefix: '' },
  };
}

async function startFloor(fastUrl: string): Promise<{ child: ChildProcess; target: Target }> {
  const { child, ready } = startNodeProxy('bench/proxy-floor.ts', { fastUrl });
  const url = await ready;
  // The floor proxies one backend only, so its RSS phase is skipped (no slow route).
  return { child, target: { ...nodeTarget(child, FLOOR, url, 'mock-model'), slowPrefix: '' } };
}

async function startNginx(
  fastUrl: string,
  slowUrl: string,
): Promise<{ child: ChildProcess; target: Target; dir: string } | null> {
  const nginx =
    which('nginx') ?? (spawnSync('test', ['-x', '/usr/sbin/nginx']).status === 0 ? '/usr/sbin/nginx' : null);
  if (nginx === null) return null;
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-nginx-'));
  const port = await freePort();
  const fast = new URL(fastUrl);
  const slow = new URL(slowUrl);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  client_max_body_size 64m;
  client_body_buffer_size 1m;
  upstream fast { server ${fast.host}; keepalive 256; }
  upstream slow { server ${slow.host}; keepalive 512; }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location /slow/ {
      proxy_pass http://slow/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
    location / {
      proxy_pass http://fast;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`,
  );
  const [command, ...args] = pinned(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf')], PROXY_CORE);
  const child = spawn(command as string, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  await answering(child, `${base}/health`);
  return { child, dir, target: { ...procTarget(child, 'nginx', base), slowPrefix: `${base}/slow` } };
}

/** Whether `url` answers (any status below 500) within ~10 s while `child` runs. */
async function answering(child: ChildProcess, url: string): Promise<boolean> {
  for (let i = 0; i < 200 && child.exitCode === null; i++) {
    const ok = await fetch(url).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** A proxy that is not a Node process of ours: its CPU and RSS from /proc, no loop delay. */
function procTarget(child: ChildProcess, name: string, base: string): Target {
  const pid = child.pid ?? 0;
  return {
    name,
    base,
    slowPrefix: '',
    slowModel: 'mock-model',
    pid,
    cpuMs: async () => procCpuMs(pid),
    rssBytes: async () => procRss(pid),
    ...NOT_NODE,
  };
}

function directTarget(fastUrl: string, slowUrl: string): Target {
  return {
    name: 'direct',
    base: new URL(fastUrl).origin,
    slowPrefix: new URL(slowUrl).origin,
    slowModel: 'mock-model',
    pid: null,
    cpuMs: async () => 0,
    rssBytes: async () => 0,
    ...NOT_NODE,
  };
}

async function startPortkey(
  peer: PortkeyPeer,
  fastUrl: string,
): Promise<{ child: ChildProcess; target: Target } | null> {
  const port = await freePort();
  const [command, ...args] = pinned(process.execPath, [peer.script, ...peer.args(port)], PROXY_CORE);
  // Silent: it logs a stack trace per failed call, which would bury the tables (its errors are counted instead).
  const child = spawn(command as string, args, { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  if (!(await answering(child, base))) {
    child.kill('SIGTERM');
    return null;
  }
  // Not in the RSS phase (no slow prefix): its slow route would need another custom host per call.
  return { child, target: { ...procTarget(child, peer.name, base), headers: peer.headers(fastUrl) } };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function load(
  target: Target,
  scenario: Scenario,
  connections: number,
  seconds: number = SECONDS,
): Promise<Omit<Cell, 'scenario' | 'connections' | 'target'>> {
  const url = new URL(target.base);
  const pool = new Pool(url.origin, { connections, pipelining: 1 });
  const path = url.pathname.replace(/\/$/, '') + scenario.path;
  const withModel = (text: string): string =>
    target.model === undefined ? text : JSON.stringify({ ...JSON.parse(text), model: target.model });
  const bodies = (scenario.turns ?? [scenario.body]).map(withModel);
  const cell = `${target.name.replace(/\W+/g, '')}-${scenario.name.replace(/\W+/g, '')}-${connections}-${++cellRuns}`;
  const latencies: number[] = [];
  const ttfbs: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  const one = async (agent: Agent): Promise<void> => {
    const start = performance.now();
    let first = 0;
    const response = await pool.request({
      path: target.recorded === true ? recordedPath(cell, agent, scenario) : path,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body: bodies[agent.sent++ % bodies.length],
    });
    for await (const _chunk of response.body) if (first === 0) first = performance.now();
    const end = performance.now();
    if (response.statusCode !== 200) errors++;
    if (measuring) {
      latencies.push(end - start);
      if (scenario.stream) ttfbs.push(first - start);
    }
    const ended = target.recorded === true ? endedRollout(cell, agent) : null;
    if (ended !== null) {
      const finished = await pool.request({
        path: `/v1/agl/rollouts/${ended}/attempts/a1`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: FINISHED_ATTEMPT,
      });
      await finished.body.dump();
      if (finished.statusCode !== 200) errors++;
    }
  };
  const worker = async (_: unknown, index: number) => {
    const agent: Agent = { calls: 0, sent: 0, index };
    while (!stop) await one(agent).catch(() => errors++);
  };
  const workers = Array.from({ length: connections }, worker);
  await new Promise((resolve) => setTimeout(resolve, WARMUP_SECONDS * 1000));
  await target.resetLoopDelay();
  const cpuBefore = await target.cpuMs();
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const count = latencies.length;
  const cpuAfter = await target.cpuMs();
  const loopDelay = await target.loopDelayMs();
  stop = true;
  await Promise.all(workers);
  await pool.close();
  latencies.sort((a, b) => a - b);
  ttfbs.sort((a, b) => a - b);
  return {
    rps: count / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ttfbP50: scenario.stream ? percentile(ttfbs, 50) : null,
    ttfbP99: scenario.stream ? percentile(ttfbs, 99) : null,
    cpuMsPerReq: target.pid === null || count === 0 ? null : (cpuAfter - cpuBefore) / count,
    loopDelayMaxMs: loopDelay?.max ?? null,
    loopDelayP99Ms: loopDelay?.p99 ?? null,
    gcPauseMaxMs: loopDelay?.gcMax ?? null,
    errors,
  };
}

let cellRuns = 0;

const FINISHED_ATTEMPT = JSON.stringify({ status: 'succeeded' });

/** One load-generator connection: the agent whose calls make up its rollouts. */
interface Agent {
  readonly index: number;
  calls: number;
  /** Calls sent in this cell, recorded or not: the turn of a conversation scenario it is at. */
  sent: number;
}

/** The rollout of an agent's call number `call`: a new one every CALLS_PER_ROLLOUT calls (0: one rollout). */
function rolloutOf(cell: string, agent: Agent, call: number): string {
  return CALLS_PER_ROLLOUT === 0 ? 'bench' : `${cell}-${agent.index}-${Math.floor(call / CALLS_PER_ROLLOUT)}`;
}

/** The attributed path of an agent's next call. */
function recordedPath(cell: string, agent: Agent, scenario: Scenario): string {
  // A conversation is one rollout (its turns share their history); other cells use CALLS_PER_ROLLOUT.
  const rollout =
    scenario.turns === undefined
      ? rolloutOf(cell, agent, agent.calls)
      : `${cell}-${agent.index}-${Math.floor(agent.sent / scenario.turns.length)}`;
  agent.calls++;
  return `/rollout/${rollout}/attempt/a1${scenario.path}`;
}

/** The rollout the agent's last call ended, when it did (FINISH_ROLLOUTS): the next call starts another. */
function endedRollout(cell: string, agent: Agent): string | null {
  if (!FINISH_ROLLOUTS || CALLS_PER_ROLLOUT === 0 || agent.calls % CALLS_PER_ROLLOUT !== 0) return null;
  return rolloutOf(cell, agent, agent.calls - 1);
}

/** Extra RSS of the proxy per stream held open (slow stand-in: 20 ms between tokens). */
async function rssPerStream(target: Target): Promise<number | null> {
  if (target.pid === null || target.slowPrefix === '' || RSS_STREAMS === 0) return null;
  const url = new URL(target.slowPrefix);
  const pool = new Pool(url.origin, { connections: RSS_STREAMS });
  const path = `${url.pathname.replace(/\/$/, '')}/v1/chat/completions`;
  const body = JSON.stringify({
    model: target.slowModel,
    messages: [{ role: 'user', content: 'a long answer' }],
    max_tokens: 400,
    stream: true,
    return_token_ids: true,
    logprobs: true,
  });
  const warm = new Pool(new URL(target.base).origin, { connections: 4 });
  const warmPath = `${new URL(target.base).pathname.replace(/\/$/, '')}/v1/chat/completions`;
  for (let i = 0; i < 50; i++) {
    const response = await warm.request({
      path: warmPath,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: scenarios()[1]?.body,
    });
    await response.body.dump();
  }
  await warm.close();
  const before = await target.rssBytes();
  let started = 0;
  let allStarted: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    allStarted = resolve;
  });
  const streams = Array.from({ length: RSS_STREAMS }, async (): Promise<void> => {
    const response = await pool.request({
      path,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    let counted = false;
    for await (const _chunk of response.body) {
      if (!counted) {
        counted = true;
        started++;
        if (started >= Math.ceil(RSS_STREAMS * RSS_READY_FRACTION)) allStarted();
      }
    }
  });
  const settled = Promise.allSettled(streams);
  await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, 20_000))]);
  const open = started;
  const during = await target.rssBytes();
  await pool.destroy().catch(() => undefined);
  await settled;
  return open === 0 ? null : (during - before) / open;
}

/** One cell from its rounds: the median of each number, the sum of errors. */
function medianCell(runs: readonly Cell[]): Cell {
  const first = runs[0] as Cell;
  const of = (pick: (cell: Cell) => number | null) => median(runs.map(pick));
  // The worst of any round: a stall is what these columns are there to show.
  const worst = (pick: (cell: Cell) => number | null) =>
    runs.some((c) => pick(c) !== null) ? Math.max(...runs.map((c) => pick(c) ?? 0)) : null;
  return {
    scenario: first.scenario,
    connections: first.connections,
    target: first.target,
    rps: of((c) => c.rps) ?? Number.NaN,
    p50: of((c) => c.p50) ?? Number.NaN,
    p99: of((c) => c.p99) ?? Number.NaN,
    ttfbP50: of((c) => c.ttfbP50),
    ttfbP99: of((c) => c.ttfbP99),
    cpuMsPerReq: of((c) => c.cpuMsPerReq),
    loopDelayMaxMs: worst((c) => c.loopDelayMaxMs),
    loopDelayP99Ms: of((c) => c.loopDelayP99Ms),
    gcPauseMaxMs: worst((c) => c.gcPauseMaxMs),
    errors: runs.reduce((sum, c) => sum + c.errors, 0),
  };
}

function fmt(value: number | null, digits = 2): string {
  return value === null || Number.isNaN(value) ? '-' : value.toFixed(digits);
}

/** CPU per request of `after` ÷ `before` round by round: `median (min-max)`, or '-' without a pair. */
function pairedRatios(after: readonly Cell[], before: readonly Cell[]): string {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(after.length, before.length); i++) {
    const a = after[i]?.cpuMsPerReq ?? null;
    const b = before[i]?.cpuMsPerReq ?? null;
    if (a !== null && b !== null && b > 0) ratios.push(a / b);
  }
  if (ratios.length === 0) return '-';
  ratios.sort((x, y) => x - y);
  const median = percentile(ratios, 50);
  return `${median.toFixed(2)}x (${(ratios[0] as number).toFixed(2)}-${(ratios[ratios.length - 1] as number).toFixed(2)})`;
}

/** The cell of `target` with the same scenario and connections as `like`. */
function cellLike(cells: readonly Cell[], target: string, like: Cell): Cell | undefined {
  return cells.find((c) => c.target === target && c.scenario === like.scenario && c.connections === like.connections);
}

function ratio(value: number | null, base: number | null | undefined): string {
  if (value === null || base === null || base === undefined || base === 0 || Number.isNaN(value)) return '-';
  return `${(value / base).toFixed(2)}x`;
}

async function main(): Promise<void> {
  spawnSync('taskset', ['-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
  const fast = await startMock(['--tokens-per-chunk', '1']);
  const slow = await startMock(['--inter-token-ms', '20']);
  const gateway = await startGateway(fast.url, slow.url);
  // The same gateway on the memory store: the loop delay and CPU the SQLite store adds are the difference.
  const memory = await startGateway(fast.url, slow.url, { storeKind: 'memory' });
  const before = BEFORE_ROOT === undefined ? null : await startGateway(fast.url, slow.url, { root: BEFORE_ROOT });
  const floor = await startFloor(fast.url);
  const nginx = await startNginx(fast.url, slow.url);
  const peer = PORTKEY ? portkeyPeer() : { reason: 'BENCH_PORTKEY=0' };
  const portkey = 'script' in peer ? await startPortkey(peer, fast.url) : null;
  const targets: Target[] = [directTarget(fast.url, slow.url)];
  if (nginx !== null) targets.push(nginx.target);
  if (portkey !== null) targets.push(portkey.target);
  for (const target of [floor.target, gateway.target, gateway.on, gateway.onRaw]) targets.push(target);
  targets.push({ ...memory.on, name: GATEWAY_MEMORY, slowPrefix: '' });
  if (before !== null) targets.push({ ...before.on, name: GATEWAY_BEFORE });
  const measured = targets.filter(
    (target) =>
      target.name === FLOOR ||
      target.name === GATEWAY_BEFORE ||
      target === portkey?.target ||
      TARGET_FILTER.length === 0 ||
      TARGET_FILTER.some((name) => target.name.startsWith(name)),
  );
  const cells: Cell[] = [];
  try {
    // RSS first, on processes that have served only a short warm-up: after the load phases the heap has
    // room to spare and new streams no longer move RSS.
    const rss = new Map<string, number | null>();
    for (const target of measured) rss.set(target.name, await rssPerStream(target));
    const chosen = scenarios().filter(
      (scenario) => SCENARIO_FILTER.length === 0 || SCENARIO_FILTER.some((name) => scenario.name.startsWith(name)),
    );
    // A gateway's first seconds under load are spent compiling its hot paths; round 1 would measure that.
    if (WARM_SECONDS > 0) {
      for (const scenario of chosen) {
        for (const target of measured) await load(target, scenario, Math.max(...CONNECTIONS), WARM_SECONDS);
      }
    }
    const samples = new Map<string, Cell[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const scenario of chosen) {
        for (const connections of CONNECTIONS) {
          // Each round starts one target later: a target always measured right after the same other one would
          // carry what that one leaves behind (an A/A run of two identical builds read 0.87x at a fixed order).
          const offset = (round - 1) % measured.length;
          for (const target of [...measured.slice(offset), ...measured.slice(0, offset)]) {
            const result = await load(target, scenario, connections);
            const key = `${scenario.name}|${connections}|${target.name}`;
            const cell = { scenario: scenario.name, connections, target: target.name, ...result };
            samples.set(key, [...(samples.get(key) ?? []), cell]);
            process.stderr.write(
              `round ${round}: ${scenario.name} c=${connections} ${target.name}: ${result.rps.toFixed(0)} req/s\n`,
            );
          }
        }
      }
    }
    for (const runs of samples.values()) cells.push(medianCell(runs));

    const lines: string[] = [];
    lines.push(
      `Loopback, ${SECONDS} s per cell, median of ${ROUNDS} rounds, proxy pinned to core ${PROXY_CORE}, load generator + stand-in on core ${LOAD_CORE}.`,
    );
    if (nginx === null) lines.push('nginx is not installed: ratios to nginx are omitted (apt-get install nginx).');
    if (portkey === null) {
      const why = 'reason' in peer ? peer.reason : 'its server did not start';
      lines.push(`Portkey is not measured (${why}).`);
    }
    lines.push('');
    lines.push(
      '| scenario | conns | target | req/s | p50 ms | p99 ms | stream TTFB p50 ms | stream TTFB p99 ms | proxy CPU ms/req | loop delay max ms | loop delay p99 ms | req/s vs nginx | p50 vs nginx | p99 vs nginx | TTFB vs nginx | TTFB p99 vs nginx | CPU vs nginx | CPU vs floor | errors |',
    );
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const cell of cells) {
      const base = cellLike(cells, 'nginx', cell);
      const floorCell = cellLike(cells, FLOOR, cell);
      lines.push(
        `| ${cell.scenario} | ${cell.connections} | ${cell.target} | ${fmt(cell.rps, 0)} | ${fmt(cell.p50)} | ${fmt(cell.p99)} | ${fmt(cell.ttfbP50)} | ${fmt(cell.ttfbP99)} | ${fmt(cell.cpuMsPerReq, 3)} | ${fmt(cell.loopDelayMaxMs, 1)} | ${fmt(cell.loopDelayP99Ms, 1)} | ${ratio(cell.rps, base?.rps)} | ${ratio(cell.p50, base?.p50)} | ${ratio(cell.p99, base?.p99)} | ${ratio(cell.ttfbP50, base?.ttfbP50)} | ${ratio(cell.ttfbP99, base?.ttfbP99)} | ${ratio(cell.cpuMsPerReq, base?.cpuMsPerReq)} | ${ratio(cell.cpuMsPerReq, floorCell?.cpuMsPerReq)} | ${cell.errors} |`,
      );
    }
    lines.push('');
    lines.push(
      `Against the floor (${FLOOR}), same rounds: the gateway with recording on, CPU per request as a ratio, stream TTFB p99 as a difference, event-loop delay beside the floor's and beside the same gateway's on the memory store (what the SQLite store adds is the difference). The same process with recording off (unattributed URL: no sequence id, no store write; the call's span and capture still run) gives what the proxy path alone costs.`,
    );
    lines.push('');
    lines.push(
      '| scenario | conns | floor CPU ms/req | recording off CPU ms/req | gateway CPU ms/req | CPU vs floor | memory store CPU ms/req | TTFB p99 - floor ms | loop delay max ms (floor) | loop delay max ms (gateway) | GC pause max ms (gateway) | loop delay max ms (memory store) |',
    );
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const cell of cells.filter((c) => c.target === GATEWAY_ON)) {
      const floorCell = cellLike(cells, FLOOR, cell);
      const ttfbDelta =
        cell.ttfbP99 === null || floorCell?.ttfbP99 === null || floorCell === undefined
          ? null
          : cell.ttfbP99 - floorCell.ttfbP99;
      const memoryCell = cellLike(cells, GATEWAY_MEMORY, cell);
      const offCell = cellLike(cells, GATEWAY_OFF, cell);
      const off =
        offCell === undefined
          ? '-'
          : `${fmt(offCell.cpuMsPerReq, 3)} (${ratio(offCell.cpuMsPerReq, floorCell?.cpuMsPerReq)})`;
      lines.push(
        `| ${cell.scenario} | ${cell.connections} | ${fmt(floorCell?.cpuMsPerReq ?? null, 3)} | ${off} | ${fmt(cell.cpuMsPerReq, 3)} | ${ratio(cell.cpuMsPerReq, floorCell?.cpuMsPerReq)} | ${fmt(memoryCell?.cpuMsPerReq ?? null, 3)} | ${fmt(ttfbDelta)} | ${fmt(floorCell?.loopDelayMaxMs ?? null, 1)} | ${fmt(cell.loopDelayMaxMs, 1)} | ${fmt(cell.gcPauseMaxMs, 1)} | ${fmt(memoryCell?.loopDelayMaxMs ?? null, 1)} |`,
      );
    }
    lines.push('');
    lines.push(
      `Agent view: the gateway (recording on) as a ratio to the same gateway with agentView 'raw', same rounds.`,
    );
    lines.push('');
    lines.push('| scenario | conns | req/s vs raw | p50 vs raw | p99 vs raw | TTFB p50 vs raw | CPU ms/req vs raw |');
    lines.push('|---|---|---|---|---|---|---|');
    for (const cell of cells.filter((c) => c.target === GATEWAY_ON)) {
      const base = cellLike(cells, GATEWAY_ON_RAW, cell);
      lines.push(
        `| ${cell.scenario} | ${cell.connections} | ${ratio(cell.rps, base?.rps)} | ${ratio(cell.p50, base?.p50)} | ${ratio(cell.p99, base?.p99)} | ${ratio(cell.ttfbP50, base?.ttfbP50)} | ${ratio(cell.cpuMsPerReq, base?.cpuMsPerReq)} |`,
      );
    }
    lines.push('');
    if (portkey !== null) {
      lines.push(
        `The TypeScript peer: ${portkey.target.name}'s CPU per call as a multiple of the gateway's (recording on), same rounds (issue 18's target: at least 5x). It records nothing.`,
      );
      lines.push('');
      lines.push(
        '| scenario | conns | peer CPU ms/req | gateway CPU ms/req | peer ÷ gateway | peer p50 ms | gateway p50 ms | peer errors |',
      );
      lines.push('|---|---|---|---|---|---|---|---|');
      for (const cell of cells.filter((c) => c.target === GATEWAY_ON)) {
        const peerCell = cellLike(cells, portkey.target.name, cell);
        // A peer that answers with errors measures its error path, not a call: no ratio for it.
        const failing = peerCell !== undefined && peerCell.errors > 0;
        const peerRatio = failing ? 'fails' : ratio(peerCell?.cpuMsPerReq ?? null, cell.cpuMsPerReq);
        lines.push(
          `| ${cell.scenario} | ${cell.connections} | ${fmt(peerCell?.cpuMsPerReq ?? null, 3)} | ${fmt(cell.cpuMsPerReq, 3)} | ${peerRatio} | ${fmt(peerCell?.p50 ?? null)} | ${fmt(cell.p50)} | ${peerCell?.errors ?? '-'} |`,
        );
      }
      lines.push('');
    }
    if (before !== null) {
      lines.push(
        `Before and after (BENCH_BEFORE_ROOT=${BEFORE_ROOT}), same rounds: CPU per request of each gateway (recording on), each as a ratio to the floor, after ÷ before of the medians and, paired, round by round (the two measured back to back, so a burst of machine load moves both): their median and range; stream TTFB p99 minus the floor's.`,
      );
      lines.push('');
      lines.push(
        '| scenario | conns | floor CPU ms/req | before CPU ms/req | after CPU ms/req | before ÷ floor | after ÷ floor | after ÷ before | paired after ÷ before, median (range) | TTFB p99 - floor ms (before → after) |',
      );
      lines.push('|---|---|---|---|---|---|---|---|---|---|');
      for (const cell of cells.filter((c) => c.target === GATEWAY_ON)) {
        const same = (name: string) => cellLike(cells, name, cell);
        const floorCell = same(FLOOR);
        const beforeCell = same(GATEWAY_BEFORE);
        const ttfb = (c: Cell | undefined) =>
          c?.ttfbP99 === null || c === undefined || floorCell?.ttfbP99 === null || floorCell === undefined
            ? null
            : c.ttfbP99 - floorCell.ttfbP99;
        const rounds = (name: string) => samples.get(`${cell.scenario}|${cell.connections}|${name}`) ?? [];
        lines.push(
          `| ${cell.scenario} | ${cell.connections} | ${fmt(floorCell?.cpuMsPerReq ?? null, 3)} | ${fmt(beforeCell?.cpuMsPerReq ?? null, 3)} | ${fmt(cell.cpuMsPerReq, 3)} | ${ratio(beforeCell?.cpuMsPerReq ?? null, floorCell?.cpuMsPerReq)} | ${ratio(cell.cpuMsPerReq, floorCell?.cpuMsPerReq)} | ${ratio(cell.cpuMsPerReq, beforeCell?.cpuMsPerReq)} | ${pairedRatios(rounds(GATEWAY_ON), rounds(GATEWAY_BEFORE))} | ${fmt(ttfb(beforeCell))} → ${fmt(ttfb(cell))} |`,
        );
      }
      lines.push('');
    }
    lines.push(`| target | RSS per in-flight stream (KiB, ${RSS_STREAMS} streams) | vs nginx |`);
    lines.push('|---|---|---|');
    const nginxRss = rss.get('nginx') ?? null;
    for (const target of measured) {
      const value = rss.get(target.name) ?? null;
      lines.push(`| ${target.name} | ${fmt(value === null ? null : value / 1024, 1)} | ${ratio(value, nginxRss)} |`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const child of [gateway.child, memory.child, floor.child, ...(before === null ? [] : [before.child])]) {
      child.send('close');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    portkey?.child.kill('SIGTERM');
    if (nginx !== null) {
      nginx.child.kill('SIGTERM');
      rmSync(nginx.dir, { recursive: true, force: true });
    }
    rmSync(gateway.dir, { recursive: true, force: true });
    rmSync(memory.dir, { recursive: true, force: true });
    if (before !== null) rmSync(before.dir, { recursive: true, force: true });
    fast.child.kill('SIGTERM');
    slow.child.kill('SIGTERM');
  }
}

await main();
