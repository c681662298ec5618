// Real coding-agent CLIs (Claude Code, Codex) from the project's devDependencies, run the way a training job runs
// them: a clean environment (PATH, a throwaway HOME and what the test passes), stdin from an empty file (a run as
// root once turned /dev/null into a regular file, which a harness then reads as input), bounded by coreutils
// `timeout` so the harness and the commands it spawned are stopped together. Outbound traffic goes to a proxy
// sink on loopback that refuses every CONNECT, so nothing reaches another host even if a quiet setting is missed.
// Every harness gets the same task (one harmless shell command, then a final answer) from the same scripted model,
// and its run is checked the same way: the tool round trip the engine saw, and spans that train.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { spansToTrajectories } from '../../src/adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../../src/adapters/triplets.js';
import type { Span } from '../../src/store/core/types.js';
import type { MockChatMessage, MockRequestRecord, MockRespond, MockVllm } from '../servers/mock-vllm.js';
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

/** `node_modules/.bin/<name>`, checked by running `--version` once. */
export function harnessBinary(name: 'claude' | 'codex'): HarnessBinary {
  const path = join(ROOT, 'node_modules/.bin', name);
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

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The task every harness test gives: run one harmless shell command, then answer. */
export const SHELL_TASK = {
  prompt: 'Write hi to out.txt with the shell.',
  command: 'echo hi | tee out.txt',
  finalText: 'Wrote out.txt.',
} as const;

/** The scripted model: while the harness's shell `tool` is offered and no tool result came back, call it; then finish. */
export function shellTaskModel(options: { readonly tool: string; readonly args: Readonly<Obj> }): MockRespond {
  return (prompt, ctx) => {
    const messages: MockChatMessage[] = prompt.messages ?? [];
    const offered = ctx.tools.some((t) => isObj(t) && isObj(t.function) && t.function.name === options.tool);
    if (offered && !messages.some((m) => m.role === 'tool')) {
      return { toolCalls: [{ name: options.tool, arguments: { ...options.args } }] };
    }
    return SHELL_TASK.finalText;
  };
}

/** The chat calls the engine served since `before` (a count taken before the run). */
export function chatCallsSince(mock: MockVllm, before: number): MockRequestRecord[] {
  return mock.requests.filter((r) => r.path === '/v1/chat/completions').slice(before);
}

/** The run's two chat calls: the second carries the model's shell call (`argName` holds the command) and its output. */
export function expectShellRoundTrip(
  chats: readonly MockRequestRecord[],
  options: { readonly tool: string; readonly argName: string },
): void {
  expect(chats).toHaveLength(2);
  const second = chats[1]?.body;
  const messages = isObj(second) && Array.isArray(second.messages) ? (second.messages as Obj[]) : [];
  const asked = messages.find((m) => m.role === 'assistant' && m.tool_calls);
  type ChatToolCall = { id: string; function: { name: string; arguments: string } };
  const call = (asked?.tool_calls as ChatToolCall[] | undefined)?.[0];
  expect(call?.function.name).toBe(options.tool);
  expect((JSON.parse(call?.function.arguments ?? '{}') as Obj)[options.argName]).toBe(SHELL_TASK.command);
  const result = messages.find((m) => m.role === 'tool');
  expect(result?.tool_call_id).toBe(call?.id);
  expect(JSON.stringify(result?.content)).toContain('hi');
}

/**
 * The run's spans, one per chat call: distinct sequence ids in order, every one a training row (none dropped) whose
 * prompt and response ids are the ones the engine rendered and generated, logprob for logprob.
 */
export function expectTrainableSpans(options: {
  readonly spans: readonly Span[];
  readonly chats: readonly MockRequestRecord[];
  readonly mock: MockVllm;
}): void {
  const { spans, chats, mock } = options;
  expect(spans).toHaveLength(chats.length);
  const seqs = spans.map((s) => s.sequence_id);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  expect(new Set(seqs).size).toBe(spans.length);
  const drops: TrainingDrop[] = [];
  const triplets = spansToTriplets(spans, { onDropped: (d) => drops.push(d) });
  expect(drops).toEqual([]);
  expect(triplets.map((t) => t.metadata.sequence_id)).toEqual(seqs);
  const ledger = chats.map((r) => mock.ledger.byResponseId(r.responseId ?? '')[0]);
  triplets.forEach((t, i) => {
    expect(t.prompt.token_ids).toEqual(ledger[i]?.promptIds);
    expect(t.response.token_ids).toEqual(ledger[i]?.tokenIds);
    expect(t.response.logprobs).toHaveLength(t.response.token_ids.length);
  });
  expect(spansToTrajectories(spans).length).toBeGreaterThan(0);
}
