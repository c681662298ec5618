// `rollgate store stats|prune|vacuum|archive`: housekeeping on a store file or database, run while no gateway
// writes to it (vacuum needs the file to itself; the others work beside a gateway on PostgreSQL).
//   stats    counts per status, spans, bytes, and the file size (SQLite)
//   prune    one retention round with the given policy (the same code as `store.retention`)
//   vacuum   SQLite: rewrites the file compactly and turns on incremental vacuum for later prunes
//   archive  writes chosen finished rollouts with their spans to Parquet, then deletes them
import { statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { type Command, InvalidArgumentError } from 'commander';
import { ConfigError, parseStoreSpec } from '../../config/load.js';
import { configSchema, type StoreConfig } from '../../config/schema.js';
import { silentLogger } from '../logger.js';
import { createStore } from '../store/core/create-store.js';
import { isRetentionStore, pruneOnce, type RetentionStore } from '../store/core/retention.js';
import {
  type LightningStore,
  ROLLOUT_STATUSES,
  type Rollout,
  type RolloutStatus,
  TERMINAL_STATUSES,
} from '../store/core/types.js';

export const EXIT_STORE_ERROR = 1;
export const EXIT_STORE_USAGE = 2;

/** Rollouts read (and archived) per store page. */
const PAGE = 200;

interface StoreSpecOptions {
  readonly store: string;
}

function storeConfig(spec: string): StoreConfig {
  return configSchema.parse({ store: parseStoreSpec(spec) }).store;
}

/** Bytes of a SQLite file and its WAL; null for other stores or a file not there. */
export function sqliteFileBytes(config: StoreConfig): number | null {
  if (config.kind !== 'sqlite' || config.path === ':memory:') return null;
  let total = 0;
  for (const suffix of ['', '-wal']) {
    try {
      total += statSync(config.path + suffix).size;
    } catch {
      if (suffix === '') return null;
    }
  }
  return total;
}

async function withStore(spec: string, run: (store: LightningStore, config: StoreConfig) => Promise<number>) {
  let config: StoreConfig;
  let store: LightningStore;
  try {
    config = storeConfig(spec);
    store = await createStore(config, { logger: silentLogger });
  } catch (error) {
    const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`rollgate: cannot open the store: ${message}\n`);
    return EXIT_STORE_USAGE;
  }
  try {
    return await run(store, config);
  } catch (error) {
    process.stderr.write(`rollgate: store command failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_STORE_ERROR;
  } finally {
    await store.close();
  }
}

function retentionStore(store: LightningStore): RetentionStore {
  if (!isRetentionStore(store)) throw new Error('this store cannot delete finished rollouts');
  return store;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function terminalStatuses(value: string, previous: RolloutStatus[] = []): RolloutStatus[] {
  const out = [...previous];
  for (const part of value.split(',').map((v) => v.trim())) {
    if (part === '') continue;
    if (!(TERMINAL_STATUSES as readonly string[]).includes(part)) {
      throw new InvalidArgumentError(`only finished statuses can be archived: ${TERMINAL_STATUSES.join(', ')}`);
    }
    out.push(part as RolloutStatus);
  }
  return out;
}

function epochSeconds(value: string): number {
  const asNumber = Number(value);
  if (value.trim() !== '' && Number.isFinite(asNumber)) return asNumber;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError('expected epoch seconds or an ISO date');
  return ms / 1000;
}

// ---- stats ----------------------------------------------------------------------------------------------

export interface StoreStats {
  readonly rollouts: number;
  readonly by_status: Record<RolloutStatus, number>;
  readonly attempts: number;
  readonly spans: number;
  readonly span_bytes: number;
  readonly file_bytes: number | null;
}

async function collectStats(store: LightningStore, config: StoreConfig): Promise<StoreStats> {
  const statistics = await store.statistics();
  const byStatus = {} as Record<RolloutStatus, number>;
  // One-row pages: the total is counted by the store, no rollout is read.
  for (const status of ROLLOUT_STATUSES) {
    byStatus[status] = (await store.queryRollouts({ status_in: [status], limit: 1 })).total;
  }
  return {
    rollouts: statistics.total_rollouts,
    by_status: byStatus,
    attempts: statistics.total_attempts,
    spans: statistics.total_spans,
    span_bytes: statistics.total_span_bytes,
    file_bytes: sqliteFileBytes(config),
  };
}

function printStats(stats: StoreStats): void {
  const lines = [
    `rollouts    ${stats.rollouts}`,
    ...ROLLOUT_STATUSES.map((s) => `  ${s.padEnd(10)}${stats.by_status[s]}`),
    `attempts    ${stats.attempts}`,
    `spans       ${stats.spans}`,
    `span bytes  ${stats.span_bytes}`,
    ...(stats.file_bytes === null ? [] : [`file bytes  ${stats.file_bytes}`]),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---- vacuum ---------------------------------------------------------------------------------------------

/**
 * Rewrites a SQLite file without its free pages and with auto_vacuum = INCREMENTAL, which SQLite only applies to an
 * existing file through a full VACUUM; from then on each retention round gives freed pages back as it goes.
 */
export function vacuumSqliteFile(path: string): void {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

// ---- archive --------------------------------------------------------------------------------------------

export interface ArchiveSelection {
  readonly statuses: readonly RolloutStatus[];
  /** Only rollouts that finished before this time (epoch seconds). */
  readonly finishedBefore?: number;
  readonly rolloutIds?: readonly string[];
  /** At most this many rollouts in one archive file. */
  readonly limit: number;
}

async function selectForArchive(store: LightningStore, selection: ArchiveSelection): Promise<Rollout[]> {
  const chosen: Rollout[] = [];
  for (let offset = 0; chosen.length < selection.limit; offset += PAGE) {
    const page = await store.queryRollouts({
      status_in: [...selection.statuses],
      ...(selection.rolloutIds === undefined ? {} : { rollout_id_in: [...selection.rolloutIds] }),
      limit: PAGE,
      offset,
    });
    for (const rollout of page.items) {
      const before = selection.finishedBefore;
      if (before !== undefined && (rollout.end_time === null || rollout.end_time >= before)) continue;
      chosen.push(rollout);
      if (chosen.length === selection.limit) break;
    }
    if (page.items.length < PAGE) break;
  }
  return chosen;
}

/**
 * One Parquet row per span (a rollout without spans gets one row with null span columns), carrying the whole
 * rollout and span as JSON so the archive can be read back losslessly, plus the columns one filters on.
 */
export async function writeArchive(store: LightningStore, rollouts: readonly Rollout[], path: string): Promise<number> {
  const columns = {
    rollout_id: [] as string[],
    status: [] as string[],
    end_time: [] as Array<number | null>,
    attempt_id: [] as Array<string | null>,
    sequence_id: [] as Array<number | null>,
    span_name: [] as Array<string | null>,
    rollout: [] as string[],
    span: [] as Array<string | null>,
  };
  const push = (rollout: Rollout, span: Record<string, unknown> | null) => {
    columns.rollout_id.push(rollout.rollout_id);
    columns.status.push(rollout.status);
    columns.end_time.push(rollout.end_time);
    columns.attempt_id.push(span === null ? null : String(span.attempt_id));
    columns.sequence_id.push(span === null ? null : Number(span.sequence_id));
    columns.span_name.push(span === null ? null : String(span.name));
    columns.rollout.push(JSON.stringify(rollout));
    columns.span.push(span === null ? null : JSON.stringify(span));
  };
  for (const rollout of rollouts) {
    const spans = (await store.querySpans(rollout.rollout_id)).items;
    if (spans.length === 0) push(rollout, null);
    for (const span of spans) push(rollout, span as unknown as Record<string, unknown>);
  }
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'rollout_id', data: columns.rollout_id, type: 'STRING' },
      { name: 'status', data: columns.status, type: 'STRING' },
      { name: 'end_time', data: columns.end_time, type: 'DOUBLE' },
      { name: 'attempt_id', data: columns.attempt_id, type: 'STRING' },
      { name: 'sequence_id', data: columns.sequence_id, type: 'INT32' },
      { name: 'span_name', data: columns.span_name, type: 'STRING' },
      { name: 'rollout', data: columns.rollout, type: 'STRING' },
      { name: 'span', data: columns.span, type: 'STRING' },
    ],
  });
  await writeFile(path, new Uint8Array(buffer));
  return columns.rollout_id.length;
}

// ---- registration ---------------------------------------------------------------------------------------

export function registerStoreCommand(program: Command): void {
  const store = program.command('store').description('Inspect and compact a store: stats, prune, vacuum, archive');
  const specHelp = 'the store: sqlite:PATH or postgres://URL';

  store
    .command('stats')
    .description('Print rollout counts per status, spans, and the file size')
    .requiredOption('--store <spec>', specHelp)
    .option('--json', 'print one JSON object')
    .action(async (options: StoreSpecOptions & { json?: boolean }) => {
      process.exitCode = await withStore(options.store, async (opened, config) => {
        const stats = await collectStats(opened, config);
        if (options.json === true) process.stdout.write(`${JSON.stringify(stats)}\n`);
        else printStats(stats);
        return 0;
      });
    });

  store
    .command('prune')
    .description('Delete finished rollouts by age and/or count once (queued and running rollouts are kept)')
    .requiredOption('--store <spec>', specHelp)
    .option('--max-age <seconds>', 'delete rollouts that finished more than this many seconds ago', positiveNumber)
    .option('--max-rollouts <n>', 'keep at most this many rollouts (oldest finished go first)', positiveInt)
    .action(async (options: StoreSpecOptions & { maxAge?: number; maxRollouts?: number }) => {
      if (options.maxAge === undefined && options.maxRollouts === undefined) {
        process.stderr.write('rollgate: store prune needs --max-age and/or --max-rollouts\n');
        process.exitCode = EXIT_STORE_USAGE;
        return;
      }
      process.exitCode = await withStore(options.store, async (opened, config) => {
        const before = sqliteFileBytes(config);
        const report = await pruneOnce({
          store: retentionStore(opened),
          policy: { maxAgeS: options.maxAge ?? null, maxRollouts: options.maxRollouts ?? null, afterBatchAck: false },
        });
        const after = sqliteFileBytes(config);
        const sizes = before === null || after === null ? '' : `; file ${before} -> ${after} bytes`;
        process.stdout.write(`deleted ${report.deleted} finished rollouts${sizes}\n`);
        return 0;
      });
    });

  store
    .command('vacuum')
    .description('SQLite: compact the file and enable incremental vacuum (stop the gateway first)')
    .requiredOption('--store <spec>', 'the store file: sqlite:PATH')
    .action((options: StoreSpecOptions) => {
      let config: StoreConfig;
      try {
        config = storeConfig(options.store);
      } catch (error) {
        process.stderr.write(`rollgate: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = EXIT_STORE_USAGE;
        return;
      }
      if (config.kind !== 'sqlite') {
        process.stderr.write('rollgate: vacuum is for SQLite files; PostgreSQL reclaims space with autovacuum\n');
        process.exitCode = EXIT_STORE_USAGE;
        return;
      }
      const before = sqliteFileBytes(config);
      try {
        vacuumSqliteFile(config.path);
      } catch (error) {
        process.stderr.write(`rollgate: vacuum failed: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = EXIT_STORE_ERROR;
        return;
      }
      process.stdout.write(`vacuumed ${config.path}: ${before ?? 0} -> ${sqliteFileBytes(config) ?? 0} bytes\n`);
    });

  store
    .command('archive')
    .description('Write finished rollouts with their spans to Parquet, then delete them from the store')
    .requiredOption('--store <spec>', specHelp)
    .requiredOption('-o, --out <file>', 'Parquet file to write')
    .option('--status <statuses>', 'finished statuses to archive (default: all finished)', terminalStatuses)
    .option('--finished-before <time>', 'only rollouts that finished before this time (epoch s or ISO)', epochSeconds)
    .option('--rollouts <ids>', 'only these rollout ids (comma-separated)', (v: string, prev: string[] = []) => [
      ...prev,
      ...v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ])
    .option('--limit <n>', 'at most this many rollouts in this file (default 10000)', positiveInt)
    .option('--keep', 'write the archive but delete nothing')
    .action(
      async (
        options: StoreSpecOptions & {
          out: string;
          status?: RolloutStatus[];
          finishedBefore?: number;
          rollouts?: string[];
          limit?: number;
          keep?: boolean;
        },
      ) => {
        process.exitCode = await withStore(options.store, async (opened) => {
          const rollouts = await selectForArchive(opened, {
            statuses: options.status ?? TERMINAL_STATUSES,
            ...(options.finishedBefore === undefined ? {} : { finishedBefore: options.finishedBefore }),
            ...(options.rollouts === undefined ? {} : { rolloutIds: options.rollouts }),
            limit: options.limit ?? 10_000,
          });
          const rows = await writeArchive(opened, rollouts, options.out);
          let deleted = 0;
          // Only after the whole file is written: a failed write deletes nothing.
          if (options.keep !== true) {
            const prunable = retentionStore(opened);
            for (const rollout of rollouts) if (await prunable.deleteFinishedRollout(rollout.rollout_id)) deleted++;
          }
          process.stdout.write(
            `archived ${rollouts.length} rollouts (${rows} rows) to ${options.out}; deleted ${deleted}\n`,
          );
          return 0;
        });
      },
    );
}
