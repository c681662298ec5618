// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that crosses
// `wal_autocheckpoint` pages: copying that many pages back into the database file and syncing it takes tens of
// milliseconds on a small machine, and every call in flight waits for it (the gateway's p99 stall). The store turns
// it off on its own connection and this worker thread, with a connection of its own to the same file, runs PASSIVE
// checkpoints instead: PASSIVE neither waits for nor blocks the writer, so commits go on while it copies.
//
// Checkpoints only move committed pages from the WAL into the main file: a commit is as durable before as after, so
// running them later (or never, when the worker cannot start) changes no guarantee. Without them the WAL only
// grows, which is why a worker that fails hands checkpointing back to SQLite (`onFallback`).
//
// Sustained writes need one more thing. A PASSIVE checkpoint copies the frames that were in the WAL when it
// started; the WAL starts over only when a writer finds every frame copied, which never happens while a commit
// lands during every checkpoint. The WAL then grows for as long as writing goes on (650 MB after 32k small
// rollouts, over 1 GB at 50k), and the commit that finally restarts it cuts the file back to its size limit on
// the event loop: ftruncate of a 1.1 GB file took 0.56 s on the 2-core box, and the commit that cut a 596 MB WAL
// stalled 2.65 s while writing 100k rollouts. So once the WAL is past `restartAboveBytes`, the owner holds its
// next commit (`holdForRestart`) until a checkpoint has copied everything: that commit restarts the WAL while it
// is still small, and it stays under the size limit, so there is nothing to cut.
import type { Worker } from 'node:worker_threads';
import { CHECKPOINTER_CACHE_KIB, memoryPragmas } from './sqlite-memory.js';
import { startSqliteThread } from './sqlite-thread.js';

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
  /** WAL size past which the owner's next commit waits for a complete checkpoint (default 16 MiB). */
  readonly restartAboveBytes?: number;
}

const DEFAULT_MIN_INTERVAL_MS = 1000;
/** Commits before the thread starts: a store that writes little never pays for one (its WAL stays small). */
const DEFAULT_COMMITS_BEFORE_START = 100;
/** The WAL is found past it at most one checkpoint interval late: it starts over at this plus a second of writes. */
const DEFAULT_RESTART_ABOVE_BYTES = 16 * 2 ** 20;

// The thread's code, started by sqlite-thread.ts.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
for (const pragma of ${JSON.stringify(memoryPragmas(CHECKPOINTER_CACHE_KIB))}) db.pragma(pragma);
const pageSize = db.pragma('page_size', { simple: true });
let last = 0;
let closing = false;
let timer = null;
// A paced request waits for its timer; an immediate one ('now', with an id) answers it too when it comes first.
let pacedPending = false;
function checkpoint(nowId) {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (closing) return;
  last = Date.now();
  let answer;
  try {
    const row = db.pragma('wal_checkpoint(PASSIVE)')[0];
    answer = { ok: true, busy: row.busy, log: row.log, checkpointed: row.checkpointed, pageSize };
  } catch (error) {
    // SQLITE_BUSY: another checkpoint (the owner's close) holds the lock; the next request tries again.
    answer = { ok: false, error: String(error) };
  }
  answer.paced = pacedPending;
  answer.nowId = nowId;
  pacedPending = false;
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
  if (typeof message === 'object' && message !== null && message.kind === 'now') {
    checkpoint(message.id);
    return;
  }
  // The owner asks once per answer; the wait keeps checkpoints apart (this thread's timer, not the event loop's).
  pacedPending = true;
  const wait = last + workerData.minIntervalMs - Date.now();
  if (wait > 0) timer = setTimeout(() => checkpoint(null), wait);
  else checkpoint(null);
});
`;

function isCheckpointAnswer(value: unknown): value is { ok: true } & CheckpointResult {
  return typeof value === 'object' && value !== null && 'ok' in value && value.ok === true;
}

/** Which requests an answer serves: the paced one (`committed`) and/or one `checkpointNow` (its id). */
function answerFor(value: unknown): { paced: boolean; nowId: number | null } {
  if (typeof value !== 'object' || value === null) return { paced: true, nowId: null };
  const paced = 'paced' in value ? value.paced === true : true;
  const nowId = 'nowId' in value && typeof value.nowId === 'number' ? value.nowId : null;
  return { paced, nowId };
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
  /** checkpointNow calls waiting for their checkpoint, by request id. */
  readonly #waiting = new Map<number, (result: CheckpointResult | null) => void>();
  #nextNowId = 1;
  /** WAL bytes as the last checkpoint found them (frames x page size). */
  #walBytes = 0;
  #hold: Promise<unknown> | null = null;
  /** No new hold before this time (ms): a WAL that a reader keeps from restarting must not slow every commit. */
  #nextHoldAtMs = 0;

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

  /**
   * Runs a checkpoint now, not paced, and says what it did; null when no thread runs them. For bulk writers
   * (retention): a PASSIVE checkpoint only lets the WAL start over when it reaches the WAL's end, which never
   * happens while commits keep coming, so a bulk writer pauses for one now and then and the WAL stays bounded.
   */
  checkpointNow(): Promise<CheckpointResult | null> {
    if (this.#failed || this.#closed) return Promise.resolve(null);
    const worker = this.#worker ?? this.#start();
    if (worker === null) return Promise.resolve(null);
    const id = this.#nextNowId++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      worker.postMessage({ kind: 'now', id });
    });
  }

  /**
   * Null while the WAL is small. Past `restartAboveBytes`: a promise for a complete checkpoint, after which the
   * owner's next commit restarts the WAL; commits wait for it, the event loop does not. At most one hold per
   * `minIntervalMs`, so a WAL that cannot restart (another process reading an old snapshot) costs one wait a
   * second, not one per commit.
   */
  holdForRestart(): Promise<unknown> | null {
    if (this.#hold !== null) return this.#hold;
    if (this.#walBytes <= (this.#options.restartAboveBytes ?? DEFAULT_RESTART_ABOVE_BYTES)) return null;
    const now = performance.now();
    if (now < this.#nextHoldAtMs) return null;
    this.#nextHoldAtMs = now + (this.#options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS);
    const hold = this.checkpointNow().finally(() => {
      this.#hold = null;
    });
    this.#hold = hold;
    return hold;
  }

  #request(): void {
    const worker = this.#worker ?? this.#start();
    if (worker === null) return;
    this.#inFlight = true;
    worker.postMessage('checkpoint');
  }

  #start(): Worker | null {
    // An exit nobody asked for would leave a request out forever and the WAL growing without a checkpoint.
    this.#worker = startSqliteThread({
      source: WORKER_SOURCE,
      workerData: { path: this.#options.path, minIntervalMs: this.#options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS },
      name: 'the WAL checkpoint thread',
      onMessage: (answer) => this.#answered(answer),
      onFail: (error) => this.#fail(error),
    });
    return this.#worker;
  }

  #answered(answer: unknown): void {
    const { paced, nowId } = answerFor(answer);
    const result = isCheckpointAnswer(answer)
      ? { busy: answer.busy, log: answer.log, checkpointed: answer.checkpointed }
      : null;
    if (result !== null) {
      const pageSize =
        typeof answer === 'object' && answer !== null && 'pageSize' in answer && typeof answer.pageSize === 'number'
          ? answer.pageSize
          : 0;
      this.#walBytes = result.log * pageSize;
      this.#options.onCheckpoint?.(result);
    }
    if (nowId !== null) {
      this.#waiting.get(nowId)?.(result);
      this.#waiting.delete(nowId);
    }
    if (!paced) return;
    this.#inFlight = false;
    if (this.#again && !this.#closed && !this.#failed) {
      this.#again = false;
      this.#request();
    }
  }

  #fail(error: unknown): void {
    if (this.#failed || this.#closed) return;
    this.#failed = true;
    this.#inFlight = false;
    this.#resolveWaiting();
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
    this.#options.onFallback(error);
  }

  #resolveWaiting(): void {
    for (const resolve of this.#waiting.values()) resolve(null);
    this.#waiting.clear();
  }

  /** Closes the worker's connection (before the owner closes its own, which then checkpoints the rest). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#resolveWaiting();
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
