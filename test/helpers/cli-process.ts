// Spawns the real `rollgate` CLI (through tsx, no build needed) for end-to-end tests, and waits for
// `rollgate serve` to log that it is listening.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const CLI = join(ROOT, 'src/cli.ts');

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

export interface CliProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<ExitStatus>;
  stdout(): string;
  stderr(): string;
}

export interface ServingProcess extends CliProcess {
  readonly url: string;
}

export interface SpawnCliOptions {
  readonly cwd: string;
  /**
   * The largest file the process may write (RLIMIT_FSIZE, set with the POSIX shell's `ulimit -f` in 512-byte
   * blocks): a write past it fails with EFBIG, the way a full disk fails it. Node ignores SIGXFSZ, so it lives on.
   */
  readonly fileSizeLimitBytes?: number;
  /** Variables set in the process's environment on top of this one's. */
  readonly env?: Readonly<Record<string, string>>;
}

export function spawnCli(args: readonly string[], options: SpawnCliOptions): CliProcess {
  const argv = ['--import', TSX_LOADER, CLI, ...args];
  const limit = options.fileSizeLimitBytes;
  const [command, commandArgs] =
    limit === undefined
      ? [process.execPath, argv]
      : ['/bin/sh', ['-c', `ulimit -f ${Math.ceil(limit / 512)} && exec "$0" "$@"`, process.execPath, ...argv]];
  const child = spawn(command, commandArgs, {
    cwd: options.cwd,
    env: { ...process.env, ROLLGATE_LOGGING_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<ExitStatus>((resolveExit) => {
    child.on('exit', (code, signal) => resolveExit({ code, signal }));
  });
  return { child, exited, stdout: () => out, stderr: () => err };
}

/** Starts `rollgate serve <args>` and resolves with its URL once it logs `listening`. */
export async function startServe(
  args: readonly string[],
  options: SpawnCliOptions & { timeoutMs?: number },
): Promise<ServingProcess> {
  const proc = spawnCli(['serve', ...args], options);
  const deadline = Date.now() + (options.timeoutMs ?? 25_000);
  while (Date.now() < deadline) {
    for (const line of proc.stdout().split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'listening' && entry.url) return { ...proc, url: entry.url };
    }
    const early = await Promise.race([proc.exited, new Promise((r) => setTimeout(() => r(null), 50))]);
    if (early !== null) throw new Error(`rollgate serve exited early: ${JSON.stringify(early)}\n${proc.stderr()}`);
  }
  proc.child.kill('SIGKILL');
  throw new Error(`rollgate serve did not start:\n${proc.stdout()}\n${proc.stderr()}`);
}
