// Heavy rollout-list reads off the event loop. A page that walks many rows (a large offset, a substring search, a
// count with a WHERE, an order no index gives, a sort by a JSON value) takes from a hundred milliseconds to seconds
// at a million rollouts, and every proxied call in flight would wait for it. This worker thread answers such pages
// from its own read-only connection to the same file, so the event loop only parses the page it gets back.
//
// What it sees: each request runs in one read transaction, a WAL snapshot taken when the thread starts on it. The
// store commits everything pending before it asks (so a read after an acknowledged write sees that write), and
// everything the store holds in memory (active rollouts) is then committed too: the snapshot is at least as new as
// the store's state at the request.
//
// Plain CommonJS run with `eval`, started by sqlite-thread.ts like the checkpoint thread. The thread cannot import TypeScript, so query.ts's sort rules (sortKey,
// compareKeys) reach it as their compiled source text; test/store/sqlite-read-worker.test.ts holds both orders equal.
import type { Worker } from 'node:worker_threads';
import { compareKeys, sortKey } from '../core/query.js';
import { memoryPragmas, READER_CACHE_KIB } from './sqlite-memory.js';
import { startSqliteThread } from './sqlite-thread.js';

/** A page the store already has as SQL (sqlite-rollout-page.ts). */
export interface SqlPageRequest {
  readonly kind: 'sql';
  /** Selects `rollout_id, data` of the page, in its order. */
  readonly pageSql: string;
  readonly pageParams: ReadonlyArray<string | number>;
  /** Selects the total (one value). */
  readonly countSql: string;
  readonly countParams: ReadonlyArray<string | number>;
}

/** A page sorted by a JSON-valued field (input, config, metadata), in query.ts's order. */
export interface SortedPageRequest {
  readonly kind: 'sorted';
  readonly field: string;
  readonly descending: boolean;
  readonly offset: number;
  readonly limit: number;
  /** `WHERE …` or '' (sqlite-rollout-page.ts). */
  readonly where: string;
  readonly params: ReadonlyArray<string | number>;
}

export type ReadRequest = SqlPageRequest | SortedPageRequest;

export interface ReadAnswer {
  /** The page's rollout rows (`data`), in order. */
  readonly rows: readonly string[];
  /** The latest attempt (`data`) of each page rollout that has one. */
  readonly latestAttempts: ReadonlyMap<string, string>;
  readonly total: number;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { readonly: true, fileMustExist: true });
for (const pragma of ${JSON.stringify(memoryPragmas(READER_CACHE_KIB))}) db.pragma(pragma);
const latestAttempts = db.prepare(
  'SELECT rollout_id, data FROM attempts WHERE rollout_id IN (SELECT value FROM json_each(?)) ' +
  'ORDER BY rollout_id, sequence_id, rowid');
const rowsByRowid = db.prepare('SELECT rowid AS r, data FROM rollouts WHERE rowid IN (SELECT value FROM json_each(?))');
// query.ts's sort rules, from their own source text.
${sortKey.toString()}
${compareKeys.toString()}
function withAttempts(ids) {
  const attempts = [];
  // Sequence id order: the last row of each rollout is its latest attempt.
  for (const row of latestAttempts.iterate(JSON.stringify(ids))) attempts.push([row.rollout_id, row.data]);
  return attempts;
}
const sqlPage = db.transaction((m) => {
  const page = db.prepare(m.pageSql).all(...m.pageParams);
  const total = db.prepare(m.countSql).pluck().get(...m.countParams) ?? 0;
  return { rows: page.map((r) => r.data), attempts: withAttempts(page.map((r) => r.rollout_id)), total };
});
// Beyond this many rows before the page's end, every match is kept and sorted (query.ts: TOP_K_MAX).
const TOP_K_MAX = 10000;
const sortedPage = db.transaction((m) => {
  // The field's value as JSON text, parsed here: the value query.ts sorts by. Ties keep insertion order (rowid).
  const sign = m.descending ? -1 : 1;
  const order = (x, y) => sign * compareKeys(x.key, y.key) || x.r - y.r;
  const keep = m.offset + m.limit;
  const topK = keep <= TOP_K_MAX;
  // Near the top (the common case), only the best offset + limit entries are held, in order.
  const best = [];
  let total = 0;
  const select = db.prepare(
    'SELECT rowid AS r, json_quote(json_extract(data, ?)) AS v FROM rollouts ' + m.where + ' ORDER BY rowid');
  for (const row of select.iterate('$.' + m.field, ...m.params)) {
    total++;
    const entry = { r: row.r, key: sortKey(row.v === null ? null : JSON.parse(row.v), m.field) };
    if (!topK) {
      best.push(entry);
      continue;
    }
    if (best.length === keep && order(entry, best[best.length - 1]) >= 0) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order(best[mid], entry) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, entry);
    if (best.length > keep) best.pop();
  }
  if (!topK) best.sort(order);
  const page = best.slice(m.offset, keep).map((e) => e.r);
  const byRowid = new Map();
  for (const row of rowsByRowid.iterate(JSON.stringify(page))) byRowid.set(row.r, row.data);
  const rows = page.map((r) => byRowid.get(r));
  const ids = rows.map((data) => JSON.parse(data).rollout_id);
  return { rows, attempts: withAttempts(ids), total };
});
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const answer = m.request.kind === 'sql' ? sqlPage(m.request) : sortedPage(m.request);
    parentPort.postMessage({ id: m.id, ok: true, ...answer });
  } catch (error) {
    parentPort.postMessage({ id: m.id, ok: false, error: String(error) });
  }
});
`;

/** The thread could not answer (it failed to start, or died): the caller reads on its own connection instead. */
export class ReadWorkerUnavailable extends Error {}

interface Waiting {
  readonly resolve: (answer: ReadAnswer) => void;
  readonly reject: (error: unknown) => void;
}

function answerOf(value: unknown): { id: number; answer: ReadAnswer | null; error: string } | null {
  if (typeof value !== 'object' || value === null || !('id' in value) || typeof value.id !== 'number') return null;
  if (!('ok' in value) || value.ok !== true) {
    return { id: value.id, answer: null, error: 'error' in value ? String(value.error) : 'the read failed' };
  }
  const rows = 'rows' in value && Array.isArray(value.rows) ? value.rows.filter((r) => typeof r === 'string') : [];
  const latestAttempts = new Map<string, string>();
  if ('attempts' in value && Array.isArray(value.attempts)) {
    for (const pair of value.attempts as unknown[]) {
      if (Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string') {
        latestAttempts.set(pair[0], pair[1]);
      }
    }
  }
  const total = 'total' in value && typeof value.total === 'number' ? value.total : 0;
  return { id: value.id, answer: { rows, latestAttempts, total }, error: '' };
}

export class SqliteReadWorker {
  readonly #path: string;
  /** Started on the first heavy read: a store that never gets one never pays for a thread. */
  #worker: Worker | null = null;
  #failed = false;
  #closed = false;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;

  constructor(options: { readonly path: string }) {
    this.#path = options.path;
  }

  /** Whether a read may be sent (the thread has not failed and the store is open). */
  get available(): boolean {
    return !this.#failed && !this.#closed;
  }

  /** The page, read in one snapshot on the thread; rejects with ReadWorkerUnavailable when the thread cannot. */
  read(request: ReadRequest): Promise<ReadAnswer> {
    const worker = this.#start();
    if (worker === null) return Promise.reject(new ReadWorkerUnavailable('the read thread is not running'));
    const id = this.#nextId++;
    return new Promise<ReadAnswer>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      // A read in flight keeps the process alive (a script awaiting it); an idle thread does not.
      worker.ref();
      worker.postMessage({ id, request });
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#failAll(new ReadWorkerUnavailable('the store is closed'));
    const worker = this.#worker;
    this.#worker = null;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    await exited;
  }

  #start(): Worker | null {
    if (this.#worker !== null) return this.#worker;
    if (!this.available) return null;
    this.#worker = startSqliteThread({
      source: WORKER_SOURCE,
      workerData: { path: this.#path },
      name: 'the read thread',
      onMessage: (value) => this.#answered(value),
      onFail: (error) => this.#fail(error),
    });
    return this.#worker;
  }

  #answered(value: unknown): void {
    const answer = answerOf(value);
    if (answer === null) return;
    const waiting = this.#waiting.get(answer.id);
    if (waiting === undefined) return;
    this.#waiting.delete(answer.id);
    if (this.#waiting.size === 0) this.#worker?.unref();
    // A failed query is that request's error (as on the store's own connection); the thread goes on.
    if (answer.answer === null) waiting.reject(new Error(answer.error));
    else waiting.resolve(answer.answer);
  }

  #fail(error: unknown): void {
    if (this.#closed) return;
    this.#failed = true;
    this.#worker = null;
    this.#failAll(new ReadWorkerUnavailable(`the read thread failed: ${String(error)}`, { cause: error }));
  }

  #failAll(error: unknown): void {
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
  }
}
