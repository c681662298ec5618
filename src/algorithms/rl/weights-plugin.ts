// The weight side of the `rl` plugin as the trainer hub sees it: the one-shot update (POST /v1/rl/weights: swap,
// load with the hook, verify, bump) and the first step of the native-transfer handshake (prepare -> commit/abort,
// weight-handshake.ts). Every completed swap is counted in the hub's swap stats and reported to `onSwapped`, which
// moves the plugin's own version on.
import type { Logger } from '../../logger.js';
import type { GatewayControl } from '../types.js';
import type { WeightLoadHook } from './options.js';
import type { TrainerHub, TrainerHubPlugin } from './trainer-hub.js';
import type { PreparedWeights } from './weight-handshake.js';
import { type SwapReport, WeightSwap, type WeightSwapOptions } from './weight-swap.js';
import { syncWeights } from './weight-sync.js';

export interface WeightsPluginOptions {
  readonly hub: TrainerHub;
  readonly control: GatewayControl;
  readonly model: string;
  readonly hook: WeightLoadHook;
  readonly logger: Logger;
  readonly fetch?: typeof fetch;
  /** Seconds a prepared transfer may wait for its commit before it is aborted. */
  readonly prepareDeadlineS: number;
  /** Versioned adapters: the newest versions kept loaded (the rl plugin's maxStaleness + 1). Default 1. */
  readonly keepAdapterVersions?: number;
  /** Called after every completed swap, before the trainer gets its answer. */
  readonly onSwapped?: (report: SwapReport) => Promise<void> | void;
}

export function createWeightsPlugin(
  options: WeightsPluginOptions,
): Pick<TrainerHubPlugin, 'applyWeights' | 'prepareWeights'> {
  const { hub, model, logger, hook } = options;
  const swapOptions: WeightSwapOptions = {
    control: options.control,
    model,
    logger,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    // The hook's headers (e.g. the backends' authorization) go to their dev routes too.
    ...(hook.type === 'http' ? { engineHeaders: hook.headers } : {}),
    onFallback: (fallback) => hub.swapStats.recordFallback(fallback),
    ...(options.keepAdapterVersions === undefined ? {} : { keepAdapterVersions: options.keepAdapterVersions }),
  };
  const swapped = async (report: SwapReport): Promise<void> => {
    hub.swapStats.recordSwap(model, report);
    await options.onSwapped?.(report);
  };

  return {
    async applyWeights(update) {
      const report = await syncWeights({ ...swapOptions, hook }, update);
      await swapped(report);
      return { sync_ms: report.sync_ms, swap: report };
    },

    async prepareWeights(update): Promise<PreparedWeights> {
      const level = update.sleep;
      const swap = await WeightSwap.begin(
        // Sleeping frees the KV cache that frozen generations would continue from: a colocated swap drains.
        level === undefined ? swapOptions : { ...swapOptions, mode: 'drain' },
        { reason: `receiving weights version ${update.version}` },
      );
      try {
        // A colocated trainer writes a checkpoint the hook loads at the commit: no native transfer to announce.
        await (level === undefined ? swap.startTransfer() : swap.sleep(level));
      } catch (error) {
        await swap.abort().catch(() => undefined);
        throw error;
      }
      logger.info('weights transfer prepared', { model, version: update.version, mode: swap.mode, sleep: level });
      return {
        mode: swap.mode,
        backends: swap.backends,
        deadlineS: options.prepareDeadlineS,
        ...(level === undefined ? {} : { sleep: level }),
        async commit({ version, fields }) {
          try {
            if (level === undefined) {
              await swap.finishTransfer(version);
            } else {
              await swap.wakeForLoad();
              await swap.load(hook, { version, fields });
              await swap.wake();
            }
            await swap.verify(version);
          } catch (error) {
            await swap
              .abort()
              .catch((resumeError: unknown) =>
                logger.error('resuming after a failed weights commit failed', { model, err: String(resumeError) }),
              );
            throw error;
          }
          const report = await swap.commit(version);
          await swapped(report);
          logger.info('weights committed', { model, version, mode: report.mode, pauseMs: Math.round(report.pause_ms) });
          return report;
        },
        async abort(reason) {
          logger.warn('weights transfer abandoned: resuming on the old weights', {
            model,
            version: update.version,
            reason,
          });
          await swap.abort();
        },
      };
    },
  };
}
