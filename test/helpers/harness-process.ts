// Real coding-agent CLIs (Claude Code, Codex, opencode, pi) from the project's devDependencies, run the way a
// training job runs them: a clean environment (PATH, a throwaway HOME and what the test passes), stdin from an empty
// file (a run as root once turned /dev/null into a regular file, which a harness then reads as input), bounded by
// coreutils `timeout` so the harness and the commands it spawned are stopped together. Outbound traffic goes to a
// proxy sink on loopback that refuses every CONNECT, so nothing reaches another host even if a quiet setting is
// missed. Every harness gets the same task from the engine twin's agent policy (it thinks, runs AGENT_TASK.steps
// shell commands, then answers), and its run is checked the same way: the loop finished and really ran its
// commands, and every call the engine served is a span carrying the engine's own token ids.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, expect } from 'vitest';
import type { RowDrop } from '../../src/adapters/length-limits.js';
import { readLlmCall } from '../../src/adapters/llm-call.js';
import { sortSpansBySequence } from '../../src/adapters/span-order.js';
import type { TrainingDrop } from '../../src/adapters/triplets.js';
import { buildBatch } from '../../src/algorithms/rl/batch.js';
import { rlOptionsSchema } from '../../src/algorithms/rl/options.js';
import { type ExportRow, exportRows } from '../../src/commands/export.js';
import * as A from '../../src/contracts/span-attributes.js';
import type { LightningStore, Span } from '../../src/store/core/types.js';
import { type Harness, startHarness } from '../integration/gateway/harness.js';
import {
  agentFinalText,
  type MockVllm,
  type MockVllmOptions,
  qwen3Tokenizer,
  STEPS_FILE,
  stepLine,
} from '../servers/mock-vllm.js';
import { collectOutput } from './child-output.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const VERSION_TIMEOUT_MS = 20_000;

export interface HarnessBinary {
  readonly path: string;
  /** `<binary> --version` ran: the package's native binary exists for this platform. */
  readonly runnable: boolean;
  /** Its version line, or why it cannot run. */
  readonly detail: string;
}

/**
 * opencode is installed beside the project, not as a devDependency: its package lists one optional binary package per
 * platform, and a registry that serves only some of them (as the project's CI mirror does) leaves a lock file that
 * `npm ci` refuses as out of sync. The exact version is pinned here and installed once per version into a cache.
 */
export const OPENCODE_VERSION = '1.18.33';

function installedOpencode(): string {
  const home = process.env.ROLLGATE_TOOLS_HOME ?? join(homedir(), '.cache/rollgate/tools');
  const prefix = join(home, `opencode-ai-${OPENCODE_VERSION}`);
  const bin = join(prefix, 'node_modules/.bin/opencode');
  if (!existsSync(bin)) {
    spawnSync(
      'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', `opencode-ai@${OPENCODE_VERSION}`],
      { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 },
    );
  }
  return bin;
}

/** `node_modules/.bin/<name>` (opencode: its cached install), checked by running `--version` once. */
export function harnessBinary(name: 'claude' | 'codex' | 'opencode' | 'pi'): HarnessBinary {
  const path = name === 'opencode' ? installedOpencode() : join(ROOT, 'node_modules/.bin', name);
  if (!existsSync(path)) return { path, runnable: false, detail: `${path} is not installed (npm ci installs it)` };
  const run = spawnSync(path, ['--version'], {
    encoding: 'utf8',
    timeout: VERSION_TIMEOUT_MS,
    env: cleanEnv({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (run.status === 0) return { path, runnable: true, detail: run.stdout.trim() };
  const why = run.error?.message ?? (run.stderr.trim() || `exit ${String(run.status ?? run.signal)}`);
  return { path, runnable: false, detail: `${name} --version failed on ${process.platform}-${process.arch}: ${why}` };
}

/** PATH with the running node first (Codex's launcher is a node script), then the system's; nothing inherited. */
function cleanEnv(extra: Readonly<Record<string, string>>): Record<string, string> {
  return { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, TERM: 'dumb', LANG: 'C.UTF-8', ...extra };
}

/**
 * Whether a harness's suite is skipped: only outside CI, and only when its binary does not run here (said once, with
 * the reason). In CI a missing or broken harness runs its tests anyway, and they fail: it is never a silent skip.
 */
export function skipHarness(binary: HarnessBinary, label: string): boolean {
  if (binary.runnable) return false;
  if (process.env.CI) return false;
  console.warn(`Skipping the ${label} end-to-end test: ${binary.detail}`);
  return true;
}

export interface HarnessRig {
  /** The gateway in front of the engine twin's agent policy (AGENT_TWIN). */
  readonly h: Harness;
  /** Where the harness's outbound traffic goes (and is refused). */
  readonly sink: ProxySink;
}

/** A suite's gateway, twin and proxy sink, started before its tests and closed after them. */
export function harnessRig(pool: Readonly<Record<string, unknown>> = {}): HarnessRig {
  const rig: { h?: Harness; sink?: ProxySink } = {};
  beforeAll(async () => {
    rig.h = await startHarness(AGENT_TWIN, {}, pool);
    rig.sink = await startProxySink();
  });
  afterAll(async () => {
    await rig.sink?.close();
    await rig.h?.close();
  });
  return {
    get h() {
      if (rig.h === undefined) throw new Error('harnessRig: used before beforeAll');
      return rig.h;
    },
    get sink() {
      if (rig.sink === undefined) throw new Error('harnessRig: used before beforeAll');
      return rig.sink;
    },
  };
}

export interface HarnessDirs {
  /** The harness's HOME (throwaway). */
  readonly home: string;
  /** Its working directory: the task's files. */
  readonly work: string;
  /** An empty file used as stdin. */
  readonly emptyStdin: string;
}

export function harnessDirs(prefix: string): HarnessDirs {
  const root = mkdtempSync(join(tmpdir(), `rollgate-${prefix}-`));
  const dirs = { home: join(root, 'home'), work: join(root, 'work'), emptyStdin: join(root, 'empty') };
  mkdirSync(dirs.home);
  mkdirSync(dirs.work);
  writeFileSync(dirs.emptyStdin, '');
  return dirs;
}

export interface HarnessRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunHarnessOptions {
  readonly binary: string;
  readonly args: readonly string[];
  readonly dirs: HarnessDirs;
  /** Added to the clean environment (HOME is the throwaway one). */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutS: number;
}

export function runHarness(options: RunHarnessOptions): Promise<HarnessRun> {
  const { dirs } = options;
  return new Promise((resolveRun, reject) => {
    // -k: a harness that ignores SIGTERM is killed 5 s later.
    const child = spawn('timeout', ['-k', '5', String(options.timeoutS), options.binary, ...options.args], {
      cwd: dirs.work,
      env: cleanEnv({ HOME: dirs.home, ...options.env }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const output = collectOutput(child);
    child.on('error', reject);
    child.on('close', (code, signal) => resolveRun({ code, signal, ...output }));
    // An empty stdin that is a file, not a tty and not /dev/null (see the top of the file).
    createReadStream(dirs.emptyStdin).pipe(child.stdin);
  });
}

export interface ProxySink {
  /** `http://127.0.0.1:<port>`, for HTTPS_PROXY / HTTP_PROXY. */
  readonly url: string;
  /** Every host:port something tried to reach through it. */
  readonly attempts: readonly string[];
  close(): Promise<void>;
}

/** A proxy on loopback that refuses everything with 403 and remembers what was asked for. */
export async function startProxySink(): Promise<ProxySink> {
  const attempts: string[] = [];
  const server: Server = createServer((req, res) => {
    attempts.push(req.url ?? '');
    res.writeHead(403, { connection: 'close' }).end();
  });
  server.on('connect', (req, socket) => {
    attempts.push(req.url ?? '');
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    attempts,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}

/** The proxy variables pointing a harness's side traffic at `sink` while loopback stays direct. */
export function proxyEnv(sink: ProxySink): Record<string, string> {
  return {
    HTTPS_PROXY: sink.url,
    HTTP_PROXY: sink.url,
    https_proxy: sink.url,
    http_proxy: sink.url,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  };
}

/** How long one harness run may take (coreutils `timeout`), and its test with setup and checks around it. */
export const HARNESS_TIMEOUT_S = 50;
export const HARNESS_TEST_TIMEOUT_MS = (HARNESS_TIMEOUT_S + 15) * 1000;

/** The task every harness test gives; the twin's agent policy runs `steps` shell commands, then answers. */
export const AGENT_TASK = { prompt: 'Run the steps of the task in the shell, then report.', steps: 2 } as const;

/**
 * The model the twin serves, named like the Qwen3 checkpoint whose tokenizer and template it uses: a vLLM pool
 * serving a Qwen3 model gets faithful history by default, as a user's pool would.
 */
export const AGENT_MODEL = 'Qwen3-8B';

/** The engine twin every harness test runs against: Qwen3 mode, the agent policy, AGENT_TASK.steps tool calls. */
export const AGENT_TWIN: MockVllmOptions = {
  model: AGENT_MODEL,
  tokenizer: 'qwen3',
  policy: 'agent',
  agentSteps: AGENT_TASK.steps,
};

/** The harness exited 0 after its whole tool loop: every step's command ran in its work dir, and it answered. */
export function expectAgentLoopFinished(run: HarnessRun, dirs: HarnessDirs): void {
  expect(run.code, `the harness failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
  expect(run.stdout).toContain(agentFinalText(AGENT_TASK.steps));
  const lines = Array.from({ length: AGENT_TASK.steps }, (_, i) => `${stepLine(i + 1)}\n`).join('');
  expect(readFileSync(join(dirs.work, STEPS_FILE), 'utf8')).toBe(lines);
}

/** Where the engine generates: the chat route, or completions when the gateway sends token ids. */
const GENERATION_PATHS: ReadonlySet<string> = new Set(['/v1/chat/completions', '/v1/completions']);

/**
 * Every generation the engine served for rollout `rid` is one span, in sequence order, whose prompt and response
 * ids are the ones the engine rendered and generated, with a logprob per response token and the token-id status
 * `ok`. Returns the spans split by role; the main loop has one call per tool step plus the final answer, each
 * starting with the policy's think block and served under faithful history.
 */
export function expectEveryCallRecorded(options: {
  readonly spans: readonly Span[];
  readonly mock: MockVllm;
  readonly rid: string;
}): { readonly main: Span[]; readonly auxiliary: Span[] } {
  const { mock, rid } = options;
  const served = mock.requests.filter((r) => r.headers['x-rollout-id'] === rid && GENERATION_PATHS.has(r.path));
  // LLM calls only (a reward would be a span too); every gateway call has a token-id status, ids or not.
  const spans = sortSpansBySequence(options.spans).filter((s) => readLlmCall(s, { includeAuxiliary: true }) !== null);
  expect(spans).toHaveLength(served.length);
  expect(new Set(spans.map((s) => s.sequence_id)).size).toBe(spans.length);
  const generated = served.map((r) => mock.ledger.byResponseId(r.responseId ?? '')[0]);
  for (const span of spans) {
    expect(span.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(span.attributes[A.ATTR_STREAM_STATUS] ?? A.STREAM_STATUS_VALUE_OK).toBe(A.STREAM_STATUS_VALUE_OK);
    const call = readLlmCall(span, { includeAuxiliary: true });
    expect(call?.dropReason).toBeNull();
    // The gateway may rename the response id (msg_, resp_) and calls may overlap, so a span is matched to the
    // generation whose ids it holds; each generation matches one span.
    const k = generated.findIndex(
      (e) => isDeepStrictEqual(e?.promptIds, call?.promptIds) && isDeepStrictEqual(e?.tokenIds, call?.responseIds),
    );
    expect(k, `span ${span.sequence_id} holds ids the engine did not serve`).toBeGreaterThanOrEqual(0);
    generated.splice(k, 1);
    expect(call?.logprobs).toHaveLength(call?.responseIds.length ?? -1);
  }
  const isMain = (s: Span) => s.attributes[A.ATTR_CALL_ROLE] === A.CALL_ROLE_VALUE_MAIN;
  const main = spans.filter(isMain);
  expect(main).toHaveLength(AGENT_TASK.steps + 1);
  // The policy thought on every turn, and the thinking is in the recorded ids; the loop was generated from token
  // ids (faithful history, the default for a Qwen3 model on vLLM), the policy reading its state back from them.
  const think = qwen3Tokenizer().idOf('<think>');
  for (const span of main) {
    expect(readLlmCall(span)?.responseIds[0]).toBe(think);
    expect(span.attributes[A.ATTR_HISTORY_MODE]).toBe('faithful');
  }
  return { main, auxiliary: spans.filter((s) => !isMain(s)) };
}

/**
 * The rollout as `rollgate export` reads it (trajectory level, the limits it applies by default): one training row
 * holding every main call, its prompt the first call's prompt whole and its context ending with the last call's
 * prompt and answer, nothing cut or left out for its length; each auxiliary call left out and counted as such.
 */
export async function expectOneTrainableRow(options: {
  readonly store: LightningStore;
  readonly rid: string;
  readonly main: readonly Span[];
  readonly auxiliary: readonly Span[];
}): Promise<void> {
  const drops: TrainingDrop[] = [];
  const rowDrops: RowDrop[] = [];
  const rows: ExportRow[] = [];
  for await (const row of exportRows({
    store: options.store,
    level: 'trajectory',
    rolloutIds: [options.rid],
    onDropped: (drop) => drops.push(drop),
    onRowDropped: (drop) => rowDrops.push(drop),
  })) {
    rows.push(row);
  }
  expect(rowDrops).toEqual([]);
  expect(drops.map((d) => [d.reason, d.sequenceId])).toEqual(
    options.auxiliary.map((s) => ['auxiliary', s.sequence_id]),
  );
  expect(rows).toHaveLength(1);
  const [row] = rows;
  const calls = options.main.map((s) => readLlmCall(s));
  expect(row?.sequence_ids).toEqual(options.main.map((s) => s.sequence_id));
  expect(row?.prompt_ids).toEqual(calls[0]?.promptIds);
  const last = calls.at(-1);
  expect([...(row?.prompt_ids ?? []), ...(row?.response_ids ?? [])]).toEqual([
    ...(last?.promptIds ?? []),
    ...(last?.responseIds ?? []),
  ]);
  // Every generated token is trained on; the rest (tool output, template glue) is masked.
  const generated = calls.reduce((n, c) => n + (c?.responseIds.length ?? 0), 0);
  expect(row?.response_mask.filter((m) => m === 1)).toHaveLength(generated);

  // The rl plugin builds the same row into a batch, on its default options but two: no length limits are declared
  // (the engine's context holds), and one rollout alone is no GRPO group, so the test takes REINFORCE with the
  // reward the runner would have posted (1). The runner also ends the attempt, as it does after the agent exits.
  const defaults = rlOptionsSchema.parse({ model: 'harness' });
  const started = await options.store.getRolloutById(options.rid);
  const attemptId = started && 'attempt' in started ? started.attempt.attempt_id : undefined;
  if (attemptId !== undefined) await options.store.updateAttempt(options.rid, attemptId, { status: 'succeeded' });
  const rollout = await options.store.getRolloutById(options.rid);
  expect(rollout?.status).toBe('succeeded');
  const batch = await buildBatch({
    store: options.store,
    batchId: 'harness',
    step: 0,
    rollouts: [{ rolloutId: options.rid, groupId: options.rid }],
    finished: new Map(rollout ? [[options.rid, rollout]] : []),
    currentVersion: 0,
    maxStaleness: defaults.maxStaleness,
    staleTokens: defaults.staleTokens,
    estimator: 'reinforce',
    normalizeStd: defaults.normalizeStd,
    level: defaults.level,
    maxPromptLength: defaults.maxPromptLength,
    maxResponseLength: defaults.maxResponseLength,
    rewardFillna: 1,
    infraFailures: defaults.infraFailures,
    trainAuxiliary: defaults.trainAuxiliary,
  });
  expect(batch.samples.map((sample) => [sample.prompt_ids, sample.response_ids, sample.response_mask])).toEqual([
    [row?.prompt_ids, row?.response_ids, row?.response_mask],
  ]);
  expect(batch.stats.dropped.auxiliary ?? 0).toBe(options.auxiliary.length);
}
