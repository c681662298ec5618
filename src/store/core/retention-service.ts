// Starts the gateway's background retention from `store.retention` (config/schema.ts), and feeds it the rollouts
// of every RL batch the trainer acknowledges. Nothing runs when the policy deletes nothing.
import type { RetentionConfig } from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import { isRetentionStore, RetentionPruner } from './retention.js';
import type { LightningStore } from './types.js';

export interface StartRetentionOptions {
  readonly store: LightningStore;
  readonly config: RetentionConfig;
  /** The RL trainer hub: each acknowledged batch's rollouts are deleted when `afterBatchAck` is on. */
  readonly acknowledgements?: {
    onBatchRolloutsAcknowledged(listener: (rolloutIds: readonly string[]) => void): () => void;
  };
  readonly logger: Logger;
}

/** The running pruner with its close function, or null when retention is off or the store cannot prune. */
export function startRetention(options: StartRetentionOptions): { close(): Promise<void> } | null {
  const { store, config, logger } = options;
  const enabled = config.maxAgeS !== null || config.maxRollouts !== null || config.afterBatchAck;
  if (!enabled) return null;
  if (!isRetentionStore(store)) {
    logger.warn('store.retention is set but this store cannot prune; nothing will be deleted');
    return null;
  }
  const pruner = new RetentionPruner({
    store,
    policy: { maxAgeS: config.maxAgeS, maxRollouts: config.maxRollouts, afterBatchAck: config.afterBatchAck },
    intervalMs: config.intervalS * 1000,
    logger,
  });
  const unsubscribe = config.afterBatchAck
    ? options.acknowledgements?.onBatchRolloutsAcknowledged((ids) => pruner.acknowledge(ids))
    : undefined;
  pruner.start();
  return {
    async close() {
      unsubscribe?.();
      await pruner.close();
    },
  };
}
