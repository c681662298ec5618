// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that crosses
// `wal_autocheckpoint` pages: copying that many 16 KB pages back into the database file and syncing it takes tens of
// milliseconds on a small machine, and every call in flight waits for it (the gateway's p99 stall). The store turns
// it off on its own connection and this worker thread, with a connection of its own to the same file, runs PASSIVE
// checkpoints instead: PASSIVE neither waits for nor blocks the writer, so commits go on while it copies.
//
// Checkpoints only move committed pages from the WAL into the main file: a commit is as durable before as after, so
// running them later (or never, when the worker cannot start) changes no guarantee. Without them the WAL only
// grows, which is why a worker that fails hands checkpointing back to SQLite (`onFallback`).
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one checkpoint did, in WAL frames (pages), as `PRAGMA wal_checkpoint` reports it. */
export interface CheckpointResult {
  readonly busy: number;
  readonly log: number;
  readonly checkpointed: number;
}

export interface WalCheckpointerOptions {
  /** The database file (its WAL is `<path>-wal`). */
  readonly path: string;
  /**
   * Checkpoints start at most this often (default 1 s), and only after commits: the WAL holds about a second of
   * writes, and each checkpoint's two syncs are paid once a second, not per batch (measured: four a second cost a
   * small call ~10 % more CPU on the 2-core box, the syncs being most of a small checkpoint).
   */
  readonly minIntervalMs?: number;
  /** Commits before the first checkpoint (default 100). */
  readonly commitsBeforeStart?: number;
  /** The worker could not start or failed: the owner checkpoints on its own connection again. Called once. */
  readonly onFallback: (error: unknown) => void;
  /** Told after each checkpoint (tests, benchmarks). */
  readonly onCheckpoint?: (result: CheckpointResult) => void;
}

const DEFAULT_MIN_INTERVAL_MS = 1000;
/** Commits before the thread starts: a store that writes little never pays for one (its WAL stays small). */
const DEFAULT_COMMITS_BEFORE_START = 100;

// Plain CommonJS run with `eval`, so the same code serves the TypeScript sources (tests) and the compiled build
// without a separate worker file to locate. The driver path comes from the parent's own resolution.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
let last = 0;
let closing = false;
let timer = null;
function checkpoint() {
  timer = null;
  if (closing) return;
  last = Date.now();
  let answer;
  try {
    const row = db.pragma('wal_checkpoint(PASSIVE)')[0];
    answer = { ok: true, busy: row.busy, log: row.log, checkpointed: row.checkpointed };
  } catch (error) {
    // SQLITE_BUSY: another checkpoint (the owner's close) holds the lock; the next request tries again.
    answer = { ok: false, error: String(error) };
  }
  parentPort.postMessage(answer);
}
parentPort.on('message', (message) => {
  if (message === 'close') {
    closing = true;
    if (timer !== null) clearTimeout(timer);
    db.close();
    parentPort.close();
    return;
  }
  // The owner asks once per answer; the wait keeps checkpoints apart (this thread's timer, not the event loop's).
  const wait = last + workerData.minIntervalMs - Date.now();
  if (wait > 0) timer = setTimeout(checkpoint, wait);
  else checkpoint();
});
`;

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

function isCheckpointAnswer(value: unknown): value is { ok: true } & CheckpointResult {
  return typeof value === 'object' && value !== null && 'ok' in value && value.ok === true;
}

export class WalCheckpointer {
  readonly #options: WalCheckpointerOptions;
  /** Started at the first commit: a store that is only read never pays for a thread. */
  #worker: Worker | null = null;
  #inFlight = false;
  #untilStart: number;
  /** Committed again while one was asked for: the next one is asked for as soon as it answers. */
  #again = false;
  #failed = false;
  #closed = false;

  constructor(options: WalCheckpointerOptions) {
    this.#options = options;
    this.#untilStart = options.commitsBeforeStart ?? DEFAULT_COMMITS_BEFORE_START;
  }

  /** After each commit: one request at a time is out, so a commit costs a flag check unless none is. */
  committed(): void {
    if (this.#failed || this.#closed) return;
    if (this.#untilStart > 0) {
      this.#untilStart--;
      return;
    }
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    this.#request();
  }

  #request(): void {
    const worker = this.#worker ?? this.#start();
    if (worker === null) return;
    this.#inFlight = true;
    worker.postMessage('checkpoint');
  }

  #start(): Worker | null {
    try {
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          driver: driverPath,
          path: this.#options.path,
          minIntervalMs: this.#options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS,
        },
      });
      // Checkpoints are housekeeping: they never keep the process alive.
      worker.unref();
      worker.on('message', (answer: unknown) => this.#answered(answer));
      worker.on('error', (error: unknown) => this.#fail(error));
      // An exit nobody asked for would leave a request out forever and the WAL growing without a checkpoint.
      worker.on('exit', (code) => this.#fail(new Error(`the WAL checkpoint thread exited (code ${code})`)));
      this.#worker = worker;
      return worker;
    } catch (error) {
      this.#fail(error);
      return null;
    }
  }

  #answered(answer: unknown): void {
    this.#inFlight = false;
    if (isCheckpointAnswer(answer)) {
      this.#options.onCheckpoint?.({ busy: answer.busy, log: answer.log, checkpointed: answer.checkpointed });
    }
    if (this.#again && !this.#closed && !this.#failed) {
      this.#again = false;
      this.#request();
    }
  }

  #fail(error: unknown): void {
    if (this.#failed || this.#closed) return;
    this.#failed = true;
    this.#inFlight = false;
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
    this.#options.onFallback(error);
  }

  /** Closes the worker's connection (before the owner closes its own, which then checkpoints the rest). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Held again until it exits: an unreferenced thread would let the process end before close() resolves.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }
}
