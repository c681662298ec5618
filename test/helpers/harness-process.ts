// Real coding-agent CLIs (Claude Code, Codex) from the project's devDependencies, run the way a training job runs
// them: a clean environment (PATH, a throwaway HOME and what the test passes), stdin from an empty file (a run as
// root once turned /dev/null into a regular file, which a harness then reads as input), bounded by coreutils
// `timeout` so the harness and the commands it spawned are stopped together. Outbound traffic goes to a proxy
// sink on loopback that refuses every CONNECT, so nothing reaches another host even if a quiet setting is missed.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolveRun({ code, signal, stdout, stderr }));
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
