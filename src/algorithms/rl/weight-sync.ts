// The one-shot weight sync after a trainer posts new weights (POST /v1/rl/weights): a weight swap in the pool's
// mode (weight-swap.ts: drain, or keep in-flight generations frozen), the weight-load hook on every backend (HTTP
// such as vLLM's /v1/load_lora_adapter, or a command), the version check, then the version bump and the resume.
// Every way out resumes (docs/failure-classes.md#47); a failed load or check keeps the old version, so spans never claim weights
// the backends do not serve.
import type { Logger } from '../../logger.js';
import type { GatewayControl } from '../types.js';
import type { WeightLoadHook } from './options.js';
import { type SwapMode, type SwapReport, WeightSwap } from './weight-swap.js';
import type { WeightsUpdate } from './weights-update.js';

export interface WeightSyncOptions {
  readonly control: GatewayControl;
  readonly model: string;
  readonly hook: WeightLoadHook;
  readonly logger: Logger;
  readonly fetch?: typeof fetch;
  /** Overrides the pool's `swap.mode`. */
  readonly mode?: SwapMode;
  /** Versioned adapters: the newest versions kept loaded. */
  readonly keepAdapterVersions?: number;
  /** Told of each backend drained because it cannot freeze its generations. */
  readonly onFallback?: (options: { readonly model: string; readonly backend: string }) => void;
}

export async function syncWeights(options: WeightSyncOptions, update: WeightsUpdate): Promise<SwapReport> {
  const { model, hook, logger } = options;
  const swap = await WeightSwap.begin(
    {
      control: options.control,
      model,
      logger,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.mode ? { mode: options.mode } : {}),
      ...(options.onFallback ? { onFallback: options.onFallback } : {}),
      ...(hook.type === 'http' ? { engineHeaders: hook.headers } : {}),
      ...(options.keepAdapterVersions === undefined ? {} : { keepAdapterVersions: options.keepAdapterVersions }),
      adapterLoad: true,
    },
    { reason: `loading weights version ${update.version}` },
  );
  try {
    await swap.load(hook, update);
    await swap.verify(update.version);
  } catch (error) {
    try {
      await swap.abort();
    } catch (resumeError) {
      logger.error('resuming after a failed weight load failed', { model, err: String(resumeError) });
    }
    throw error;
  }
  const report = await swap.commit(update.version);
  logger.info('weights loaded', {
    model,
    version: update.version,
    mode: report.mode,
    pauseMs: Math.round(report.pause_ms),
    drainMs: Math.round(report.drain_ms),
  });
  return report;
}
