// One agent process and everything it starts, as a unit that can be killed.
//
// The child is spawned detached, which on POSIX makes it the leader of a new process group
// (pgid = its pid). Killing `-pgid` then reaches grandchildren (a shell's `sleep`, a Python
// multiprocessing pool) that would survive a kill of the child alone.

import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

export interface ProcessExit {
  /** Exit code, or null when the process died from a signal or never started. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the process could not be started (e.g. ENOENT). */
  readonly spawnError: string | null;
}

export type OutputStream = 'stdout' | 'stderr';

export interface SpawnTreeOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Receives each line the process writes (without the newline); absent => output is discarded. */
  readonly onLine?: (line: string, stream: OutputStream) => void;
}

export interface ProcessTree {
  readonly pid: number | null;
  /** Settles once the direct child has exited (never rejects). */
  readonly exited: Promise<ProcessExit>;
  /**
   * SIGTERM to the whole group, SIGKILL to whatever is left after `graceMs`. Resolves once the direct child has
   * exited and the group is gone (or was SIGKILLed). Idempotent; later calls share the first call's work.
   */
  terminate(options: { graceMs: number }): Promise<void>;
  /** After the direct child exits: give leftover group members (background jobs) SIGTERM, then SIGKILL. */
  reap(options: { graceMs: number }): Promise<void>;
}

/** How often to check whether leftover group members are gone; only runs while a kill is in progress. */
const GROUP_CHECK_INTERVAL_MS = 25;
/** Upper bound on waiting for SIGKILLed members to die (uninterruptible I/O can delay it). */
const SIGKILL_SETTLE_MS = 2_000;

export function spawnProcessTree(options: SpawnTreeOptions): ProcessTree {
  let child: ChildProcess;
  try {
    child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', options.onLine ? 'pipe' : 'ignore', options.onLine ? 'pipe' : 'ignore'],
    });
  } catch (error: unknown) {
    // spawn throws synchronously only for invalid arguments (e.g. a NUL byte in an env value).
    return failedTree(error instanceof Error ? error.message : String(error));
  }

  if (options.onLine) {
    forwardLines(child.stdout, 'stdout', options.onLine);
    forwardLines(child.stderr, 'stderr', options.onLine);
  }

  const pgid = child.pid ?? null;
  const exited = new Promise<ProcessExit>((resolve) => {
    // `on`, not `once`: a second 'error' with no listener would crash the runner.
    child.on('error', (error) => {
      // 'error' without a pid means the process never started; with a pid it is a kill failure we ignore.
      if (child.pid === undefined) resolve({ code: null, signal: null, spawnError: error.message });
    });
    child.once('exit', (code, signal) => resolve({ code, signal, spawnError: null }));
  });

  let terminating: Promise<void> | null = null;
  let reaping: Promise<void> | null = null;

  const killGroup = async (graceMs: number, waitForChild: boolean): Promise<void> => {
    if (pgid === null) return;
    signalGroup(pgid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    if (waitForChild) await raceTimeout(exited, graceMs);
    while (groupExists(pgid) && Date.now() < deadline) await delay(GROUP_CHECK_INTERVAL_MS);
    if (groupExists(pgid)) {
      signalGroup(pgid, 'SIGKILL');
      // SIGKILL is delivered asynchronously; wait (bounded) until the members have actually died, so that
      // "terminated" means no process of the tree is left running.
      const killDeadline = Date.now() + SIGKILL_SETTLE_MS;
      while (groupExists(pgid) && Date.now() < killDeadline) await delay(GROUP_CHECK_INTERVAL_MS);
    }
    if (waitForChild) await exited;
  };

  return {
    pid: pgid,
    exited,
    terminate({ graceMs }) {
      terminating ??= killGroup(graceMs, true);
      return terminating;
    },
    reap({ graceMs }) {
      if (terminating) return terminating;
      reaping ??= exited.then(() => (groupExists(pgid) ? killGroup(graceMs, false) : undefined));
      return reaping;
    },
  };
}

function failedTree(message: string): ProcessTree {
  const exited = Promise.resolve<ProcessExit>({ code: null, signal: null, spawnError: message });
  return { pid: null, exited, terminate: async () => {}, reap: async () => {} };
}

function forwardLines(
  stream: Readable | null,
  name: OutputStream,
  onLine: (line: string, stream: OutputStream) => void,
): void {
  if (!stream) return;
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  lines.on('line', (line) => onLine(line, name));
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what we want.
  }
}

/**
 * Whether any live process is left in the group. Signal 0 alone also counts zombies, and an orphaned
 * grandchild stays a zombie until PID 1 reaps it (slow in some containers), so on Linux the group is
 * read from /proc and zombies are ignored; elsewhere signal 0 is the best answer there is.
 */
function groupExists(pgid: number | null): boolean {
  if (pgid === null) return false;
  try {
    process.kill(-pgid, 0);
  } catch (error: unknown) {
    // EPERM means a member exists that we may not signal (it changed uid); treat it as present.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return hasLiveMember(pgid);
}

function hasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
  }
  return false;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
