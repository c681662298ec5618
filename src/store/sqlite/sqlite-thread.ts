// A worker thread with a connection of its own to the store's file (the WAL checkpointer, the read thread). Its code
// is plain CommonJS run with `eval`, so the same source serves the TypeScript sources (tests) and the compiled build
// without a separate worker file to locate; the driver's path comes from the parent's own resolution, as
// `workerData.driver`. Idle, a thread never keeps the process alive; an error, or an exit its owner did not ask for,
// is the owner's failure to handle.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

export interface SqliteThreadOptions {
  /** The thread's CommonJS source. */
  readonly source: string;
  /** Handed to the thread as `workerData`, with `driver` added. */
  readonly workerData: Readonly<Record<string, unknown>>;
  /** What the thread is, in the failure of an exit. */
  readonly name: string;
  readonly onMessage: (value: unknown) => void;
  /** The thread could not start, failed, or exited; an owner that closed it on purpose ignores this. */
  readonly onFail: (error: unknown) => void;
}

/** Starts the thread, unreferenced; null (after `onFail`) when it cannot start. */
export function startSqliteThread(options: SqliteThreadOptions): Worker | null {
  try {
    const worker = new Worker(options.source, {
      eval: true,
      workerData: { ...options.workerData, driver: driverPath },
    });
    worker.unref();
    worker.on('message', options.onMessage);
    worker.on('error', options.onFail);
    worker.on('exit', (code) => options.onFail(new Error(`${options.name} exited (code ${code})`)));
    return worker;
  } catch (error) {
    options.onFail(error);
    return null;
  }
}
