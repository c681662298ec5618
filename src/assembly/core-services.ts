// The recording path's long-lived services: the store, readiness, rollout attribution, the model pools and the
// forward stack (engine, store writer, tracer provider for export) that records every call into the store.
import { setMaxListeners } from 'node:events';
import type { RollgateConfig } from '../../config/schema.js';
import { createOtlpSpanProcessor } from '../../exporters/otlp-exporter.js';
import { RolloutAttribution } from '../attribution/rollout-attribution.js';
import { CallObserver } from '../gateway/engine/call-observer.js';
import { createForwardStack, type ForwardStack } from '../gateway/engine/forward-stack.js';
import { createPoolRegistry } from '../gateway/pools/model-pool.js';
import type { PoolRegistry } from '../gateway/pools/pool-types.js';
import { StoreWriter } from '../gateway/recording/store-writer.js';
import type { Logger } from '../logger.js';
import { GatewayMetrics } from '../metrics.js';
import { Readiness } from '../readiness.js';
import { createStore } from '../store/core/create-store.js';
import type { LightningStore } from '../store/core/types.js';
import type { GatewayParts } from './parts.js';

export interface CoreServices {
  readonly logger: Logger;
  readonly store: LightningStore;
  /** Aborted first thing in close(): long polls answer at once instead of holding the drain until the grace ends. */
  readonly shutdown: AbortController;
  readonly metrics: GatewayMetrics;
  readonly readiness: Readiness;
  readonly attribution: RolloutAttribution;
  readonly pools: PoolRegistry;
  readonly forwardStack: ForwardStack;
}

export async function buildCoreServices(options: {
  readonly config: RollgateConfig;
  readonly logger: Logger;
  /** A store the caller owns and closes; absent: one is built from `config.store` and closed with the gateway. */
  readonly store: LightningStore | undefined;
  readonly parts: GatewayParts;
}): Promise<CoreServices> {
  const { config, logger, parts } = options;
  let store: LightningStore;
  if (options.store === undefined) {
    const owned = await createStore(config.store, { logger });
    parts.add({ name: 'store', close: () => owned.close() });
    store = owned;
  } else {
    store = options.store;
  }
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const metrics = new GatewayMetrics();
  const readiness = new Readiness({ store, shuttingDown: () => shutdown.signal.aborted });
  // One attribution service for every entry point; it hears the store's deletes itself.
  const attribution = new RolloutAttribution({ store, autoCreate: config.rollouts.autoCreate });
  parts.add({ name: 'attribution', close: async () => attribution.close() });
  const otlpExport = createOtlpSpanProcessor(config.tracing.otlp, logger, {
    onDropped: (n) => metrics.spansDropped.inc({ exporter: 'otlp' }, n),
  });
  const pools = createPoolRegistry({ models: config.models, logger });
  // Which pools splice served ids into chat history is decided from their config; the start log says it per pool.
  for (const pool of pools.snapshot()) logger.info('history mode', { model: pool.model, ...pool.history });
  const forwardStack = createForwardStack({
    config,
    storeWriter: new StoreWriter({
      store,
      logger,
      // The rollout was deleted while the call was in flight (docs/failure-classes.md#50): the agent keeps its answer, the
      // next call on that rollout is checked again (re-created or 404), and the lost span is counted.
      onOrphanWrite: (rid, aid, error) => {
        attribution.forgetRollout(rid);
        metrics.orphanCalls.inc();
        logger.warn('call on a deleted rollout not recorded', { rid, aid, err: error.message });
      },
      // The store may have stopped taking writes: readiness asks it again instead of reusing its last answer.
      onWriteFailed: () => readiness.invalidate(),
    }),
    observeCall: new CallObserver({ metrics, logger }).observe,
    spanProcessors: otlpExport === null ? [] : [otlpExport],
    logger,
    registry: pools,
    // Spans of calls without a rollout only leave the process through OTLP.
    captureUnattributedContent: otlpExport !== null,
    recording: {
      onFailure: config.recording.onFailure,
      onUnrecorded: ({ model, served }) => metrics.unrecordedCalls.inc({ model, action: served ? 'served' : 'failed' }),
    },
  });
  parts.add({ name: 'forward stack', close: () => forwardStack.close() });
  pools.start();
  return { logger, store, shutdown, metrics, readiness, attribution, pools, forwardStack };
}
