// The services around the recording path: the pause gate and trainer hub of weight swaps, API keys, retention,
// OTLP ingest, the metrics they feed, and the engine the routes call (gated, resubmitting aborted calls).
import type { RollgateConfig } from '../../config/schema.js';
import { TrainerHub } from '../algorithms/rl/trainer-hub.js';
import { createKeyRing, type KeyRing } from '../auth/keys.js';
import type { ForwardEngine } from '../gateway/engine/forward-engine.js';
import { FleetSync } from '../gateway/swap/fleet-sync.js';
import { gateEngine } from '../gateway/swap/gated-engine.js';
import { PauseGate } from '../gateway/swap/pause-gate.js';
import { ResubmitBook, recordedIdsFromStore, resubmittingEngine } from '../gateway/swap/swap-resubmit.js';
import { LocalFleetState } from '../store/core/fleet-state.js';
import { startRetention } from '../store/core/retention-service.js';
import { createOtlpIngester, type OtlpIngester } from '../tracing/otlp-ingest.js';
import type { CoreServices } from './core-services.js';
import type { GatewayParts } from './parts.js';

export interface ControlServices {
  readonly gate: PauseGate;
  /** Pool updates and pauses shared with every replica of the store (docs/store.md, "A fleet of gateways"). */
  readonly fleet: FleetSync;
  readonly keys: KeyRing;
  readonly rlHub: TrainerHub;
  readonly ingester: OtlpIngester;
  readonly resubmitBook: ResubmitBook;
  /** A fresh engine for one route module: the forward engine behind the gate, resubmitting where pools ask. */
  readonly routesEngine: () => ForwardEngine;
}

function createPauseGate(config: RollgateConfig, core: CoreServices): PauseGate {
  return new PauseGate({
    ...config.pause,
    onOverdue: (state) =>
      core.logger.error(
        'gateway still paused past pause.alertAfterS: resume it (POST /admin/resume) if no weight load runs',
        {
          reason: state.reason,
          pausedSince: state.paused_since,
          alertAfterS: config.pause.alertAfterS,
        },
      ),
  });
}

function bindMetrics(core: CoreServices, control: Omit<ControlServices, 'routesEngine' | 'keys' | 'fleet'>): void {
  const { metrics, pools, store, readiness } = core;
  const { gate, rlHub, ingester } = control;
  rlHub.swapStats.onSwap((model, report) => {
    metrics.weightSwapPause.observe({ model, mode: report.mode, phase: 'pause' }, report.pause_ms / 1000);
    metrics.weightSwapPause.observe({ model, mode: report.mode, phase: 'drain' }, report.drain_ms / 1000);
  });
  metrics.bind({
    pools: () =>
      pools.snapshot().map((pool) => ({
        model: pool.model,
        version: pool.version,
        backends: pool.backends.map((b) => ({
          id: b.url,
          healthy: b.healthy,
          inflight: b.inflight,
          draining: b.draining,
        })),
      })),
    paused: () => gate.paused,
    pausedSince: () => gate.state().paused_since,
    pauseOverdue: () => gate.overdue,
    storeStatistics: () => store.statistics(),
    otlpIngest: () => ({ ...ingester.stats() }),
    storeWritable: async () => (await readiness.check()).store.writable,
    weightSwaps: () => rlHub.swapStats.snapshot(),
  });
}

export async function buildControlServices(options: {
  readonly config: RollgateConfig;
  readonly core: CoreServices;
  readonly parts: GatewayParts;
}): Promise<ControlServices> {
  const { config, core, parts } = options;
  const { store, logger } = core;
  const gate = createPauseGate(config, core);
  // Closed before the forward stack: calls held by a pause are refused rather than kept until the grace period ends.
  parts.add({ name: 'pause-gate', close: async () => gate.close() });
  // A store without a fleet record (memory, or one a caller built) gets one in this process, applied the same way.
  const fleet = new FleetSync({
    fleet: store.fleet ?? new LocalFleetState(),
    pools: core.pools,
    gate,
    logger,
    models: config.models,
  });
  parts.add({ name: 'fleet-sync', close: async () => fleet.close() });
  // Before the first call: a replica started mid-pause or after a version bump joins it.
  await fleet.start();
  const keys = createKeyRing(config.auth);
  const rlHub = new TrainerHub();
  parts.add({ name: 'rl-hub', close: async () => rlHub.close() });
  const retention = startRetention({ store, config: config.store.retention, acknowledgements: rlHub, logger });
  if (retention !== null) parts.add({ name: 'retention', close: () => retention.close() });
  const ingester = createOtlpIngester({ store, pairs: core.attribution, logger });
  // Pools whose weight swaps abort generations: their aborted calls are sent again (src/gateway/swap/swap-resubmit.ts).
  const resubmitBook = new ResubmitBook();
  bindMetrics(core, { gate, rlHub, ingester, resubmitBook });
  const resubmitPools = new Set(config.models.filter((m) => m.swap.mode === 'abort-resubmit').map((m) => m.name));
  const routesEngine = () =>
    resubmittingEngine(gateEngine(core.forwardStack.engine, gate), {
      book: resubmitBook,
      resubmits: (model) => resubmitPools.has(model),
      nextSequenceId: ({ rid, aid }) => store.nextSequenceId(rid, aid),
      recordedIds: recordedIdsFromStore(store),
    });
  return { gate, fleet, keys, rlHub, ingester, resubmitBook, routesEngine };
}
