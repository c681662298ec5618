// Composition root: config -> logger, store, (later) upstreams, tracer, plugins -> one Hono app.
// Everything long-lived is created here, registered as a part, and closed in reverse creation order.
import { setMaxListeners } from 'node:events';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { RollgateConfig } from '../config/schema.js';
import { createOtlpSpanProcessor } from '../exporters/otlp-exporter.js';
import { StoreSpanProcessor } from '../exporters/store-span-exporter.js';
import { auth } from '../middleware/auth.js';
import { bodyLimitFast } from '../middleware/body-json.js';
import type { AppEnv } from '../middleware/env.js';
import { hostGuard, isLoopbackHost } from '../middleware/host-guard.js';
import { requireJsonContentType } from '../middleware/json-content-type.js';
import { notFound, onError } from '../middleware/openai-errors.js';
import { originGuard } from '../middleware/origin-guard.js';
import { countRefusals } from '../middleware/refusal-metrics.js';
import { requestId } from '../middleware/request-id.js';
import { createAdminRoutes } from '../routes/admin.js';
import { createAglV1Routes } from '../routes/agl-v1.js';
import { createAnthropicRoutes } from '../routes/anthropic.js';
import { createDashboardRoutes } from '../routes/dashboard.js';
import { createMetricsRoutes } from '../routes/metrics.js';
import { createOpenAiRoutes } from '../routes/openai.js';
import { createOtlpRoutes } from '../routes/otlp.js';
import { createRlRoutes } from '../routes/rl.js';
import { createStoreAggregateRoutes } from '../routes/store-aggregates.js';
import { createStoreApiRoutes } from '../routes/store-api.js';
import { TrainerHub } from './algorithms/rl/trainer-hub.js';
import { RolloutAttribution } from './attribution/rollout-attribution.js';
import { createKeyRing } from './auth/keys.js';
import { CallObserver } from './gateway/engine/call-observer.js';
import { createForwardStack } from './gateway/engine/forward-stack.js';
import { createPoolRegistry } from './gateway/pools/model-pool.js';
import { responsesModeLookup } from './gateway/responses-via-chat/mode.js';
import { gateEngine } from './gateway/swap/gated-engine.js';
import { PauseGate } from './gateway/swap/pause-gate.js';
import { ResubmitBook, recordedIdsFromStore, resubmittingEngine } from './gateway/swap/swap-resubmit.js';
import type { Logger } from './logger.js';
import { GatewayMetrics } from './metrics.js';
import { createPinoLogger } from './pino-logger.js';
import { Readiness } from './readiness.js';
import { type ListeningServer, listen } from './server.js';
import { createStore } from './store/core/create-store.js';
import { startRetention } from './store/core/retention-service.js';
import type { LightningStore } from './store/core/types.js';
import { createOtlpIngester } from './tracing/otlp-ingest.js';

export interface Gateway {
  readonly app: Hono<AppEnv>;
  readonly store: LightningStore;
  readonly config: RollgateConfig;
  readonly logger: Logger;
  /** Batches for RL trainers (/v1/rl/*); the `rl` plugin attaches to it. */
  readonly rlHub: TrainerHub;
  /** Binds `config.server.host:port` (port 0 = any free port). Calling it again returns the same address. */
  listen(): Promise<{ url: string; port: number }>;
  /** Idempotent: stops accepting, drains in-flight requests (bounded by server.shutdownGraceMs), closes parts. */
  close(): Promise<void>;
}

export interface CreateGatewayOptions {
  /** Use this store instead of building one from `config.store`; the caller keeps ownership and closes it. */
  readonly store?: LightningStore;
  readonly logger?: Logger;
}

interface Part {
  readonly name: string;
  close(): Promise<void>;
}

export async function createGateway(config: RollgateConfig, options: CreateGatewayOptions = {}): Promise<Gateway> {
  const parts: Part[] = [];
  try {
    return await assembleGateway(config, options, parts);
  } catch (error) {
    // A part that fails to build must not leave the ones before it (store files, timers, sockets) open.
    for (const part of parts.toReversed()) await part.close().catch(() => undefined);
    throw error;
  }
}

async function assembleGateway(config: RollgateConfig, options: CreateGatewayOptions, parts: Part[]): Promise<Gateway> {
  const logger = options.logger ?? createPinoLogger({ level: config.logging.level });
  const closeParts = async () => {
    for (const part of parts.toReversed()) {
      try {
        await part.close();
      } catch (error) {
        logger.error('close failed', { part: part.name, err: error instanceof Error ? error.message : String(error) });
      }
    }
  };

  let store: LightningStore;
  if (options.store === undefined) {
    const owned = await createStore(config.store, { logger });
    parts.push({ name: 'store', close: () => owned.close() });
    store = owned;
  } else {
    store = options.store;
  }
  // Aborted first thing in close(): long polls answer at once instead of holding the drain until the grace ends.
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const metrics = new GatewayMetrics();
  const readiness = new Readiness({ store, shuttingDown: () => shutdown.signal.aborted });
  // One attribution service for every entry point; it hears the store's deletes itself.
  const attribution = new RolloutAttribution({ store, autoCreate: config.rollouts.autoCreate });
  parts.push({ name: 'attribution', close: async () => attribution.close() });
  const otlpExport = createOtlpSpanProcessor(config.tracing.otlp, logger, {
    onDropped: (n) => metrics.spansDropped.inc({ exporter: 'otlp' }, n),
  });
  const pools = createPoolRegistry({ models: config.models, logger });
  const forwardStack = createForwardStack({
    config,
    spanWriter: new StoreSpanProcessor({
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
    extraSpanProcessors: [new CallObserver({ metrics, logger }), ...(otlpExport === null ? [] : [otlpExport])],
    logger,
    registry: pools,
    // Spans of calls without a rollout only leave the process through OTLP.
    captureUnattributedContent: otlpExport !== null,
    recording: {
      onFailure: config.recording.onFailure,
      onUnrecorded: ({ model, served }) => metrics.unrecordedCalls.inc({ model, action: served ? 'served' : 'failed' }),
    },
  });
  parts.push({ name: 'forward stack', close: () => forwardStack.close() });
  pools.start();
  const gate = new PauseGate({
    ...config.pause,
    onOverdue: (state) =>
      logger.error(
        'gateway still paused past pause.alertAfterS: resume it (POST /admin/resume) if no weight load runs',
        {
          reason: state.reason,
          pausedSince: state.paused_since,
          alertAfterS: config.pause.alertAfterS,
        },
      ),
  });
  // Closed before the forward stack: calls held by a pause are refused rather than kept until the grace period ends.
  parts.push({ name: 'pause-gate', close: async () => gate.close() });
  const keys = createKeyRing(config.auth);
  const rlHub = new TrainerHub();
  parts.push({ name: 'rl-hub', close: async () => rlHub.close() });
  rlHub.swapStats.onSwap((model, report) => {
    metrics.weightSwapPause.observe({ model, mode: report.mode, phase: 'pause' }, report.pause_ms / 1000);
    metrics.weightSwapPause.observe({ model, mode: report.mode, phase: 'drain' }, report.drain_ms / 1000);
  });
  const retention = startRetention({ store, config: config.store.retention, acknowledgements: rlHub, logger });
  if (retention !== null) parts.push({ name: 'retention', close: () => retention.close() });
  const ingester = createOtlpIngester({ store, pairs: attribution, logger });
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

  // Pools whose weight swaps abort generations: their aborted calls are sent again (src/gateway/swap/swap-resubmit.ts).
  const resubmitBook = new ResubmitBook();
  const resubmitPools = new Set(config.models.filter((m) => m.swap.mode === 'abort-resubmit').map((m) => m.name));
  const routesEngine = () =>
    resubmittingEngine(gateEngine(forwardStack.engine, gate), {
      book: resubmitBook,
      resubmits: (model) => resubmitPools.has(model),
      nextSequenceId: ({ rid, aid }) => store.nextSequenceId(rid, aid),
      recordedIds: recordedIdsFromStore(store),
    });

  const app = new Hono<AppEnv>();
  app.onError(onError);
  app.notFound(notFound);
  app.use(requestId());
  // Before the guards and auth: their refusals are logged like every other answer, and counted.
  app.use(async function attachLogger(c, next) {
    c.set('logger', logger);
    await next();
  });
  app.use(countRefusals({ metrics }));
  // Without keys every caller is trusted, which only a loopback address makes safe; a rebound DNS name must
  // not turn a web page into such a caller (middleware/host-guard.ts).
  if (!keys.enabled && isLoopbackHost(config.server.host)) {
    app.use(hostGuard({ allowedHosts: config.server.allowedHosts }));
  }
  // Without keys a web page could also POST here without a preflight (a form, a body-less no-cors fetch): only
  // the gateway's own origin, loopback pages and server.corsOrigins may change state (middleware/origin-guard.ts).
  if (!keys.enabled) app.use(originGuard({ allowedOrigins: config.server.corsOrigins }));
  // Before auth: a browser's preflight carries no key, and a 401 must still be readable cross-origin.
  if (config.server.corsOrigins.length > 0) {
    const origins = config.server.corsOrigins;
    app.use(cors({ origin: origins.includes('*') ? '*' : origins, exposeHeaders: ['x-request-id'] }));
  }
  app.use(auth({ keys }));
  app.use(bodyLimitFast({ maxBytes: config.server.bodyLimitBytes }));
  app.use(requireJsonContentType());

  // Liveness only: a restart fixes none of what /ready reports (a gateway restarted on a deleted database file
  // would only start on an empty one).
  app.get('/health', (c) => c.json({ status: 'ok' }));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  // ---- Route modules: one mount line each. -------------------------------------------------------------------
  app.route('/', createStoreApiRoutes({ store, shutdown: shutdown.signal }));
  app.route('/', createStoreAggregateRoutes({ store }));
  app.route('/', createOtlpRoutes({ ingester, maxBodyBytes: config.server.bodyLimitBytes }));
  // Before the OpenAI routes: their catch-all refuses unknown paths under the prefix, and /v1/models falls through
  // to them unless the caller is an Anthropic client.
  app.route(
    '/',
    createAnthropicRoutes({
      engine: routesEngine(),
      registry: pools,
      store,
      attribution,
    }),
  );
  app.route(
    '/',
    createOpenAiRoutes({
      engine: routesEngine(),
      store,
      attribution,
      responsesMode: responsesModeLookup(config.models),
    }),
  );
  app.route('/', createAdminRoutes({ pools, gate, keys, readiness, resubmitBook }));
  app.route(
    '/',
    createAglV1Routes({
      store,
      engine: routesEngine(),
      gate,
      pools,
      trainTemperature: config.aglV1.trainTemperature,
      valTemperature: config.aglV1.valTemperature,
      attribution,
    }),
  );
  app.route('/', createMetricsRoutes({ metrics }));
  app.route('/', createRlRoutes({ hub: rlHub, shutdown: shutdown.signal }));
  app.route('/', createDashboardRoutes());
  // ------------------------------------------------------------------------------------------------------------

  let listening: Promise<ListeningServer> | null = null;
  let closing: Promise<void> | null = null;

  return {
    app,
    store,
    config,
    logger,
    rlHub,
    async listen() {
      if (closing !== null) throw new Error('rollgate: gateway is closed');
      listening ??= listen({
        fetch: app.fetch,
        host: config.server.host,
        port: config.server.port,
        keepAliveTimeoutMs: config.server.keepAliveTimeoutMs,
        limits: {
          headersTimeoutMs: config.server.headersTimeoutMs,
          requestTimeoutMs: config.server.requestTimeoutMs,
          idleTimeoutMs: config.server.idleTimeoutMs,
          maxConnections: config.server.maxConnections ?? null,
        },
      });
      let bound: ListeningServer;
      try {
        bound = await listening;
      } catch (error) {
        listening = null;
        throw error;
      }
      logger.info('listening', { url: bound.url, port: bound.port });
      return { url: bound.url, port: bound.port };
    },
    close() {
      closing ??= (async () => {
        shutdown.abort();
        const pending = listening;
        if (pending !== null) {
          const bound = await pending.catch(() => null);
          await bound?.close({ graceMs: config.server.shutdownGraceMs });
        }
        await closeParts();
        logger.info('closed');
      })();
      return closing;
    },
  };
}
