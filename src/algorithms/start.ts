// Runs the configured algorithms, in config order, next to the gateway (`rollgate serve`) or alone
// (`rollgate algorithm`). A plugin that throws is reported and stopped; it never takes the gateway down.
// `close()` aborts the running plugin through its signal and waits for it to wind down.
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import type { AlgorithmConfig } from '../../config/schema.js';
import type { Logger } from '../logger.js';
import type { JsonObject, LightningStore } from '../store/core/types.js';
import { loadDatasets } from './datasets.js';
import { isAbortError } from './errors.js';
import { algorithmLabel, createAlgorithmFromConfig } from './loader.js';
import { createProgressReporter, type ProgressOutput } from './progress.js';
import { type AlgorithmReport, type AlgorithmRunStatus, writeJsonAtomic } from './report.js';
import type { GatewayControl } from './types.js';

export interface StartAlgorithmsDeps {
  readonly store: LightningStore;
  readonly gateway: GatewayControl;
  readonly logger: Logger;
  /** Folder that relative module and dataset paths are resolved against (the config file's folder). */
  readonly baseDir: string;
  /** Where reports go (default `<baseDir>/data/reports`). */
  readonly reportDir?: string;
  /** Progress output (default: stderr). */
  readonly progressOutput?: ProgressOutput;
  /** How long `close()` waits for a plugin that ignores its abort signal (default 10 s). */
  readonly closeGraceMs?: number;
}

export interface AlgorithmOutcome {
  readonly index: number;
  readonly use: string;
  readonly name: string;
  readonly status: AlgorithmRunStatus;
  readonly error: string | null;
  readonly reportPath: string | null;
  readonly result: JsonObject | null;
}

export interface AlgorithmsHandle {
  /** Settles (never rejects) when every configured algorithm has finished, failed or been aborted. */
  readonly done: Promise<AlgorithmOutcome[]>;
  /** Idempotent: aborts the running algorithm and waits for it. */
  close(): Promise<void>;
}

const DEFAULT_CLOSE_GRACE_MS = 10_000;

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function timestampForFile(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-');
}

export function startAlgorithms(configs: readonly AlgorithmConfig[], deps: StartAlgorithmsDeps): AlgorithmsHandle {
  const controller = new AbortController();
  // Every concurrent evaluation waits on this one signal; dozens of listeners are expected, not a leak.
  setMaxListeners(0, controller.signal);
  const reportDir = deps.reportDir ?? join(deps.baseDir, 'data', 'reports');
  const output = deps.progressOutput ?? process.stderr;

  const runOne = async (config: AlgorithmConfig, index: number): Promise<AlgorithmOutcome> => {
    const label = algorithmLabel(config, index);
    const logger = deps.logger.child({ algorithm: config.use, index });
    const startedAt = new Date();
    let name = config.use;
    let reportPath: string | null = null;
    const progress = createProgressReporter({ output, name: `[${config.use}]` });
    const finish = async (status: AlgorithmRunStatus, result: JsonObject | null, error: string | null) => {
      progress.close();
      if (reportPath !== null) {
        const finishedAt = new Date();
        const report: AlgorithmReport = {
          algorithm: name,
          use: config.use,
          status,
          started_at: startedAt.toISOString(),
          finished_at: finishedAt.toISOString(),
          duration_s: (finishedAt.getTime() - startedAt.getTime()) / 1000,
          error,
          result,
        };
        try {
          await writeJsonAtomic(reportPath, report);
        } catch (writeError) {
          logger.error('cannot write algorithm report', { reportPath, err: describe(writeError) });
        }
      }
      return { index, use: config.use, name, status, error, reportPath, result };
    };

    try {
      const algorithm = await createAlgorithmFromConfig(config, { index, baseDir: deps.baseDir });
      name = algorithm.name;
      reportPath = join(reportDir, `${name}-${timestampForFile(startedAt)}-${index}.json`);
      const datasets = await loadDatasets(config.data, deps.baseDir);
      if (controller.signal.aborted) return await finish('aborted', null, 'aborted');
      logger.info('algorithm started', { algorithmName: name, reportPath });
      const result = await algorithm.run({
        store: deps.store,
        gateway: deps.gateway,
        datasets,
        logger,
        progress,
        signal: controller.signal,
        reportPath,
      });
      logger.info('algorithm finished', { algorithmName: name, reportPath });
      return await finish('succeeded', result ?? null, null);
    } catch (error) {
      if (controller.signal.aborted && isAbortError(error)) {
        logger.info('algorithm aborted', { algorithmName: name });
        return await finish('aborted', null, 'aborted');
      }
      // One line the user can act on; the stack goes to debug.
      logger.error('algorithm failed', { algorithmName: name, label, err: describe(error) });
      logger.debug('algorithm failure detail', { stack: error instanceof Error ? error.stack : undefined });
      return await finish('failed', null, `${label}: ${describe(error)}`);
    }
  };

  const done = (async () => {
    const outcomes: AlgorithmOutcome[] = [];
    for (const [index, config] of configs.entries()) {
      if (controller.signal.aborted) break;
      outcomes.push(await runOne(config, index));
    }
    return outcomes;
  })();

  let closing: Promise<void> | null = null;
  return {
    done,
    close() {
      closing ??= (async () => {
        controller.abort();
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), deps.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS);
          timer.unref();
        });
        const settled = await Promise.race([done.then(() => 'done' as const), grace]);
        clearTimeout(timer);
        if (settled === 'timeout') deps.logger.warn('algorithm ignored its abort signal; leaving it behind', {});
      })();
      return closing;
    },
  };
}
