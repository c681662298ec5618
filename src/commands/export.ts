// `rollgate export`: training data for offline trainers, straight from the store's token ids (never
// re-tokenised). One row per trajectory (turns merged, gaps masked), per transition (one per call) or per
// triplet, as JSON lines or Parquet. Reads a store file/database directly (--store) or a running
// gateway's store API (--gateway). Calls that must not be trained on (aborted, incomplete token ids) are left
// out by the adapters and counted on stderr; a rollout that continued from an aborted call exports no rows. A row
// longer than its limits (declared, else the engine's context length recorded on its calls) is left out, never cut,
// and counted; rollouts the status filter skipped are counted by status (export-report.ts).
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, parseStoreSpec } from '../../config/load.js';
import { configSchema } from '../../config/schema.js';
import { contextLengthsOf, judgeRowLength, type RowDrop } from '../adapters/length-limits.js';
import { findFinalReward } from '../adapters/reward.js';
import { sortSpansBySequence } from '../adapters/span-order.js';
import { tripletsToTrajectories } from '../adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../adapters/triplets.js';
import { rolloutHasRoutes, rowRoutedExperts, spansBySequence } from '../algorithms/rl/row-routes.js';
import { ATTR_MODEL_VERSION } from '../contracts/span-attributes.js';
import { silentLogger } from '../logger.js';
import { normalizeGatewayUrl } from '../runner/attempt-urls.js';
import { HttpStore } from '../store/client/http.js';
import { createStore } from '../store/core/create-store.js';
import {
  type LightningStore,
  ROLLOUT_STATUSES,
  type Rollout,
  type RolloutStatus,
  type Span,
} from '../store/core/types.js';
import { ExportReport } from './export-report.js';

export const EXIT_EXPORT_ERROR = 1;
export const EXIT_USAGE_ERROR = 2;

export type ExportFormat = 'jsonl' | 'parquet';
export type ExportLevel = 'trajectory' | 'transition' | 'triplet';

/** One exported row; `response_mask` and `logprobs` align with `response_ids`. */
export interface ExportRow {
  rollout_id: string;
  attempt_id: string;
  row_index: number;
  prompt_ids: number[];
  response_ids: number[];
  response_mask: number[];
  logprobs: number[] | null;
  reward: number | null;
  model_version: number | null;
  sequence_ids: number[];
  /**
   * MoE routing replay: the experts each token of prompt_ids + response_ids was routed through, base64 `.npy` of
   * shape (prompt + response - 1, layers, top_k) (docs/training-data.md#routed-experts); null when none were captured.
   */
  routed_experts: string | null;
  /**
   * Always false: a row over a length limit is left out (and counted), never cut. Kept for readers of the
   * agent-lightning layout, which filter on it.
   */
  is_drop: boolean;
}

export interface ExportOptions {
  readonly store: LightningStore;
  readonly level: ExportLevel;
  /** Only these rollouts (any status). */
  readonly rolloutIds?: readonly string[];
  /** Only rollouts started at or after this time (epoch seconds). */
  readonly since?: number;
  /** Status filter when rolloutIds is absent (default: succeeded). */
  readonly statuses?: readonly RolloutStatus[];
  /** Declared limits; absent: the engine context length recorded on each row's calls (length-limits.ts). */
  readonly maxPromptLength?: number;
  readonly maxResponseLength?: number;
  /** Told once per row left out for its length (at every level). */
  readonly onRowDropped?: (drop: RowDrop & { readonly rolloutId: string }) => void;
  /** Keep the harness's housekeeping calls (`rollgate.call.role = auxiliary`) as rows; left out by default. */
  readonly includeAuxiliary?: boolean;
  /** Told once per call left out of the rows (or kept without logprobs: `logprobs_floor`). */
  readonly onDropped?: (drop: TrainingDrop & { readonly rolloutId: string }) => void;
  /** Told once per row left out because its rollout carries routed experts but the row's are missing (R3). */
  readonly onRoutesMissing?: (rolloutId: string) => void;
}

const PAGE = 200;

async function* selectedRollouts(options: ExportOptions): AsyncGenerator<Rollout> {
  for (let offset = 0; ; offset += PAGE) {
    const page = await options.store.queryRollouts({
      ...(options.rolloutIds
        ? { rollout_id_in: [...options.rolloutIds] }
        : { status_in: [...(options.statuses ?? ['succeeded'])] }),
      sort_by: 'start_time',
      sort_order: 'asc',
      limit: PAGE,
      offset,
    });
    for (const rollout of page.items) {
      if (options.since === undefined || rollout.start_time >= options.since) yield rollout;
    }
    if (page.items.length < PAGE) return;
  }
}

function versionOf(spans: readonly Span[], sequenceIds: readonly number[]): number | null {
  let oldest: number | null = null;
  for (const span of spans) {
    const v = span.attributes[ATTR_MODEL_VERSION];
    if (typeof v === 'number' && sequenceIds.includes(span.sequence_id))
      oldest = oldest === null ? v : Math.min(oldest, v);
  }
  return oldest;
}

/**
 * The rows with their routed experts; in a rollout whose calls carry routes (R3), a row without covering ones is
 * left out (and told), never exported with another token's routes or none. Row indexes stay consecutive.
 */
function withRoutes(rows: ExportRow[], spans: readonly Span[], options: ExportOptions): ExportRow[] {
  if (!rolloutHasRoutes(spans)) return rows;
  const bySequence = spansBySequence(spans);
  const kept: ExportRow[] = [];
  for (const row of rows) {
    const routes = rowRoutedExperts(
      { promptIds: row.prompt_ids, responseIds: row.response_ids, sequenceIds: row.sequence_ids },
      bySequence,
    );
    if (routes === null) options.onRoutesMissing?.(row.rollout_id);
    else kept.push({ ...row, row_index: kept.length, routed_experts: routes });
  }
  return kept;
}

function rowsOf(rollout: Rollout, spans: readonly Span[], options: ExportOptions): ExportRow[] {
  return withRoutes(plainRowsOf(rollout, spans, options), spans, options);
}

function plainRowsOf(rollout: Rollout, spans: readonly Span[], options: ExportOptions): ExportRow[] {
  const sorted = sortSpansBySequence(spans);
  const attemptId = sorted[0]?.attempt_id ?? '';
  const onDropped = options.onDropped;
  const triplets = spansToTriplets(sorted, {
    ...(onDropped ? { onDropped: (drop) => onDropped({ ...drop, rolloutId: rollout.rollout_id }) } : {}),
    ...(options.includeAuxiliary === true ? { includeAuxiliary: true } : {}),
  });
  const onRowDropped = options.onRowDropped;
  const limits = {
    maxPromptLength: options.maxPromptLength,
    maxResponseLength: options.maxResponseLength,
    contextLengths: contextLengthsOf(sorted),
  };
  if (options.level === 'triplet') {
    // Held to the same limits as merged rows: a limit given on the command line is never ignored.
    const kept = triplets.filter((t) => {
      const tooLong = judgeRowLength(limits, {
        promptLength: t.prompt.token_ids.length,
        responseLength: t.response.token_ids.length,
        sequenceIds: [t.metadata.sequence_id],
      });
      if (tooLong !== null) onRowDropped?.({ ...tooLong, rolloutId: rollout.rollout_id });
      return tooLong === null;
    });
    return kept.map((t, i) => ({
      rollout_id: rollout.rollout_id,
      attempt_id: attemptId,
      row_index: i,
      prompt_ids: t.prompt.token_ids,
      response_ids: t.response.token_ids,
      response_mask: t.response.token_ids.map(() => 1),
      logprobs: t.response.logprobs ?? null,
      reward: t.reward,
      model_version: versionOf(sorted, [t.metadata.sequence_id]),
      sequence_ids: [t.metadata.sequence_id],
      routed_experts: null,
      is_drop: false,
    }));
  }
  const rows = tripletsToTrajectories(triplets, findFinalReward(sorted), {
    level: options.level,
    ...limits,
    ...(onRowDropped ? { onRowDropped: (drop) => onRowDropped({ ...drop, rolloutId: rollout.rollout_id }) } : {}),
  });
  return rows.map((row, i) => ({
    rollout_id: rollout.rollout_id,
    attempt_id: attemptId,
    row_index: i,
    prompt_ids: row.promptIds,
    response_ids: row.responseIds,
    response_mask: row.responseMask,
    logprobs: row.logprobs,
    reward: row.reward,
    model_version: versionOf(sorted, row.sequenceIds),
    sequence_ids: row.sequenceIds,
    routed_experts: null,
    is_drop: false,
  }));
}

/** Rows of every selected rollout, rollout by rollout (memory stays bounded by one rollout's spans). */
export async function* exportRows(options: ExportOptions): AsyncGenerator<ExportRow> {
  for await (const rollout of selectedRollouts(options)) {
    const spans = (await options.store.querySpans(rollout.rollout_id, { attempt_id: 'latest' })).items;
    yield* rowsOf(rollout, spans, options);
  }
}

/**
 * Rollouts of the statuses the export does not select, by status: what a user who expected rows from a run still
 * `running` needs to hear. Counted from the store's totals; with --since, only rollouts started since then.
 */
export async function countSkippedRollouts(options: {
  readonly store: LightningStore;
  readonly statuses: readonly RolloutStatus[];
  readonly since?: number;
}): Promise<Map<RolloutStatus, number>> {
  const counts = new Map<RolloutStatus, number>();
  for (const status of ROLLOUT_STATUSES) {
    if (options.statuses.includes(status)) continue;
    if (options.since === undefined) {
      counts.set(status, (await options.store.queryRollouts({ status_in: [status], limit: 1 })).total);
      continue;
    }
    let count = 0;
    // Newest first: the scan stops at the first rollout older than --since.
    scan: for (let offset = 0; ; offset += PAGE) {
      const page = await options.store.queryRollouts({
        status_in: [status],
        sort_by: 'start_time',
        sort_order: 'desc',
        limit: PAGE,
        offset,
      });
      for (const rollout of page.items) {
        if (rollout.start_time < options.since) break scan;
        count += 1;
      }
      if (page.items.length < PAGE) break;
    }
    counts.set(status, count);
  }
  return counts;
}

async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

export async function writeJsonl(rows: AsyncIterable<ExportRow>, out: WriteStream): Promise<number> {
  let count = 0;
  for await (const row of rows) {
    await write(out, `${JSON.stringify(row)}\n`);
    count += 1;
  }
  return count;
}

export async function writeParquet(rows: AsyncIterable<ExportRow>, path: string): Promise<number> {
  const columns = {
    rollout_id: [] as string[],
    attempt_id: [] as string[],
    row_index: [] as number[],
    prompt_ids: [] as number[][],
    response_ids: [] as number[][],
    response_mask: [] as number[][],
    logprobs: [] as Array<number[] | null>,
    reward: [] as Array<number | null>,
    model_version: [] as Array<number | null>,
    sequence_ids: [] as number[][],
    routed_experts: [] as Array<string | null>,
    is_drop: [] as boolean[],
  };
  for await (const row of rows) {
    for (const key of Object.keys(columns) as Array<keyof typeof columns>) (columns[key] as unknown[]).push(row[key]);
  }
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'rollout_id', data: columns.rollout_id, type: 'STRING' },
      { name: 'attempt_id', data: columns.attempt_id, type: 'STRING' },
      { name: 'row_index', data: columns.row_index, type: 'INT32' },
      { name: 'prompt_ids', data: columns.prompt_ids },
      { name: 'response_ids', data: columns.response_ids },
      { name: 'response_mask', data: columns.response_mask },
      { name: 'logprobs', data: columns.logprobs },
      { name: 'reward', data: columns.reward, type: 'DOUBLE' },
      { name: 'model_version', data: columns.model_version, type: 'INT32' },
      { name: 'sequence_ids', data: columns.sequence_ids },
      { name: 'routed_experts', data: columns.routed_experts, type: 'STRING' },
      { name: 'is_drop', data: columns.is_drop, type: 'BOOLEAN' },
    ],
  });
  await writeFile(path, new Uint8Array(buffer));
  return columns.rollout_id.length;
}

interface ExportCommandOptions {
  readonly format: ExportFormat;
  readonly level: ExportLevel;
  readonly store?: string;
  readonly gateway?: string;
  readonly apiKey?: string;
  readonly rollouts?: string[];
  readonly since?: number;
  readonly status?: string[];
  readonly out?: string;
  readonly includeAuxiliary?: boolean;
  readonly maxPromptLength?: number;
  readonly maxResponseLength?: number;
}

function parseLength(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number of tokens');
  return n;
}

/** The statuses `--status` names (`all`: every status); an unknown one is the user's mistake to hear about. */
function selectedStatuses(names: readonly string[] | undefined): RolloutStatus[] | string {
  if (names === undefined) return ['succeeded'];
  if (names.includes('all')) return [...ROLLOUT_STATUSES];
  const known: readonly string[] = ROLLOUT_STATUSES;
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) return `unknown --status ${unknown.join(',')} (known: ${ROLLOUT_STATUSES.join(', ')}, all)`;
  return names as RolloutStatus[];
}

function parseSince(value: string): number {
  const asNumber = Number(value);
  if (value.trim() !== '' && Number.isFinite(asNumber)) return asNumber > 1e12 ? asNumber / 1000 : asNumber;
  const date = Date.parse(value);
  if (Number.isNaN(date))
    throw new InvalidArgumentError('expected epoch seconds or an ISO date, e.g. 2026-01-31T12:00Z');
  return date / 1000;
}

function parseList(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== ''),
  ];
}

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description('Write training data (token ids, masks, logprobs, rewards) for offline trainers')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['jsonl', 'parquet']).default('jsonl'))
    .addOption(
      new Option('--level <level>', 'row per merged trajectory, per call (transition), or per triplet')
        .choices(['trajectory', 'transition', 'triplet'])
        .default('trajectory'),
    )
    .option('--store <spec>', 'read this store directly: sqlite:PATH or postgres://URL')
    .option('-g, --gateway <url>', "read a running gateway's store API instead")
    .option('--api-key <key>', 'runner or admin key for --gateway (default: ROLLGATE_API_KEY)')
    .option('--rollouts <ids>', 'only these rollout ids (comma-separated, repeatable)', parseList)
    .option('--since <time>', 'only rollouts started at or after this time (epoch seconds or ISO date)', parseSince)
    .option(
      '--status <statuses>',
      'rollout statuses to export, comma-separated, or `all` (default: succeeded; skipped rollouts are counted)',
      parseList,
    )
    .option(
      '--max-prompt-length <tokens>',
      "leave out (never cut) rows with a longer prompt (default: the engine's context length recorded on the calls)",
      parseLength,
    )
    .option(
      '--max-response-length <tokens>',
      "leave out (never cut) rows with a longer response (default: the engine's context length recorded on the calls)",
      parseLength,
    )
    .option('-o, --out <file>', 'output file (jsonl: default stdout; parquet: required)')
    .option(
      '--include-auxiliary',
      "keep the harness's housekeeping calls (titles, summaries, probes: rollgate.call.role=auxiliary) as rows",
    )
    .action(async (options: ExportCommandOptions) => {
      process.exitCode = await runExport(options);
    });
}

async function openStore(options: ExportCommandOptions): Promise<LightningStore> {
  if (options.gateway !== undefined) {
    const apiKey = options.apiKey ?? process.env.ROLLGATE_API_KEY;
    return new HttpStore({ baseUrl: normalizeGatewayUrl(options.gateway), ...(apiKey ? { apiKey } : {}) });
  }
  const config = configSchema.parse({ store: parseStoreSpec(options.store ?? '') });
  return createStore(config.store, { logger: silentLogger });
}

async function runExport(options: ExportCommandOptions): Promise<number> {
  if ((options.store === undefined) === (options.gateway === undefined)) {
    process.stderr.write('rollgate: export needs exactly one of --store <spec> or --gateway <url>\n');
    return EXIT_USAGE_ERROR;
  }
  if (options.format === 'parquet' && options.out === undefined) {
    process.stderr.write('rollgate: --format parquet needs --out <file>\n');
    return EXIT_USAGE_ERROR;
  }
  const statuses = selectedStatuses(options.status);
  if (typeof statuses === 'string') {
    process.stderr.write(`rollgate: ${statuses}\n`);
    return EXIT_USAGE_ERROR;
  }
  let store: LightningStore;
  try {
    store = await openStore(options);
  } catch (error) {
    const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`rollgate: cannot open the store: ${message}\n`);
    return EXIT_USAGE_ERROR;
  }
  const report = new ExportReport();
  let routesMissing = 0;
  try {
    const rows = exportRows({
      store,
      level: options.level,
      onDropped: ({ reason }) => report.callDropped(reason),
      onRowDropped: (drop) => report.rowDropped(drop),
      onRoutesMissing: () => {
        routesMissing += 1;
      },
      statuses,
      ...(options.rollouts ? { rolloutIds: options.rollouts } : {}),
      ...(options.since !== undefined ? { since: options.since } : {}),
      ...(options.includeAuxiliary === true ? { includeAuxiliary: true } : {}),
      ...(options.maxPromptLength !== undefined ? { maxPromptLength: options.maxPromptLength } : {}),
      ...(options.maxResponseLength !== undefined ? { maxResponseLength: options.maxResponseLength } : {}),
    });
    let count: number;
    if (options.format === 'parquet') {
      count = await writeParquet(rows, options.out ?? '');
    } else if (options.out === undefined) {
      count = 0;
      for await (const row of rows) {
        if (!process.stdout.write(`${JSON.stringify(row)}\n`)) await once(process.stdout, 'drain');
        count += 1;
      }
    } else {
      const out = createWriteStream(options.out);
      try {
        count = await writeJsonl(rows, out);
      } finally {
        out.end();
        await once(out, 'close');
      }
    }
    // Explicit rollout ids are exported whatever their status: nothing was skipped for it.
    if (options.rollouts === undefined) {
      report.skippedRollouts(
        await countSkippedRollouts({
          store,
          statuses,
          ...(options.since !== undefined ? { since: options.since } : {}),
        }),
      );
    }
    const lines = report.lines({
      rows: count,
      level: options.level,
      maxPromptLength: options.maxPromptLength,
      maxResponseLength: options.maxResponseLength,
      statuses: options.rollouts === undefined ? statuses : null,
    });
    for (const line of lines) process.stderr.write(line);
    if (routesMissing > 0)
      process.stderr.write(
        `rollgate: ${routesMissing} rows left out: routed experts missing or not covering their tokens (routed_experts_missing)\n`,
      );
    return 0;
  } catch (error) {
    process.stderr.write(`rollgate: export failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_EXPORT_ERROR;
  } finally {
    await store.close();
  }
}
