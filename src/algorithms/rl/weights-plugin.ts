// The weight side of the `rl` plugin as the trainer hub sees it: the one-shot update (POST /v1/rl/weights: swap,
// load with the hook, verify, bump) and the first step of the native-transfer handshake (prepare -> commit/abort,
// weight-handshake.ts). Every completed swap is counted in the hub's swap stats and reported to `onSwapped`, which
// moves the plugin's own version on.
import type { Logger } from '../../logger.js';
import type { GatewayControl } from '../types.js';
import { judgeExpiredTransfer } from './expired-transfer.js';
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

/** Engines holding weights no version names: out of service (503 + Retry-After) until a trainer prepares again. */
async function quarantineSwap(options: {
  readonly swap: WeightSwap;
  readonly hub: TrainerHub;
  readonly model: string;
  readonly logger: Logger;
  readonly version: number;
  readonly reported: Readonly<Record<string, string | null>>;
}): Promise<void> {
  const { swap, hub, model, version, reported } = options;
  hub.swapStats.setQuarantine(model, { model, version, reported, since: Date.now() / 1000 });
  options.logger.error(
    'weights transfer expired and the engines hold weights no version names: pool out of service until a trainer ' +
      'prepares again',
    { model, version, from: swap.fromVersion, reported },
  );
  await swap.quarantine();
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
  const quarantine = (q: {
    readonly swap: WeightSwap;
    readonly version: number;
    readonly reported: Readonly<Record<string, string | null>>;
  }): Promise<void> => quarantineSwap({ ...q, hub, model, logger });
  const swapped = async (report: SwapReport): Promise<void> => {
    hub.swapStats.recordSwap(model, report);
    await options.onSwapped?.(report);
  };
  /**
   * A new prepare settles the weights again, so a pool kept out of service after an expired one comes back (its
   * calls are held by this swap's pause meanwhile, and the commit or abort decides what the engines run).
   */
  const liftQuarantine = async (swap: WeightSwap): Promise<void> => {
    if (hub.swapStats.quarantineOf(model) === null) return;
    const setDraining = options.control.setBackendDraining?.bind(options.control);
    if (setDraining !== undefined) {
      await Promise.all(swap.backends.map((url) => setDraining({ model, url, draining: false })));
    }
    hub.swapStats.setQuarantine(model, null);
    logger.info('pool back in service: a trainer prepared new weights', { model });
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
        await liftQuarantine(swap);
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
        async expire() {
          const { version } = update;
          const reason = 'the trainer did not commit or abort before the deadline';
          // Asleep, the engines never received anything: the commit would have loaded the checkpoint.
          const reported = level === undefined ? await swap.reportedVersions().catch(() => null) : null;
          const outcome =
            reported === null
              ? level === undefined
                ? 'quarantined'
                : 'resumed_old'
              : judgeExpiredTransfer({
                  reported,
                  oldVersion: swap.fromVersion,
                  newVersion: version,
                  policy: swap.verifyPolicy,
                });
          hub.swapStats.recordExpiry({ model, outcome });
          if (outcome === 'resumed_old') {
            logger.warn('weights transfer expired: the engines report the old version, resuming on it', {
              model,
              version,
              reason,
              reported,
            });
            await swap.abort();
            return { outcome };
          }
          if (outcome === 'committed_new') {
            logger.warn('weights transfer expired: the engines report the prepared version, committing it', {
              model,
              version,
              reason,
            });
            try {
              // The trainer labelled its weights; the engines' update session still has to be closed.
              await swap.finishTransfer(version);
              await swap.verify(version);
            } catch (error) {
              logger.error('committing an expired weights transfer failed: pool out of service', {
                model,
                version,
                err: error instanceof Error ? error.message : String(error),
              });
              await quarantine({ swap, version, reported: reported ?? {} });
              return { outcome: 'quarantined' };
            }
            const report = await swap.commit(version);
            await swapped(report);
            return { outcome, swap: report };
          }
          await quarantine({ swap, version, reported: reported ?? {} });
          return { outcome };
        },
      };
    },
  };
}
