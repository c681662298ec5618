// Composition root: config -> logger, store, (later) upstreams, tracer, plugins -> one Hono app.
// Everything long-lived is created by the builders of src/assembly/, registered as a part, and closed in reverse
// creation order; this file adds the HTTP layer (middleware, one mount line per route module), the only place in
// src/ that may.
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { RollgateConfig } from '../config/schema.js';
import { auth } from '../middleware/auth.js';
import { bodyLimitFast } from '../middleware/body-json.js';
import { CachedRouter } from '../middleware/cached-router.js';
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
import type { TrainerHub } from './algorithms/rl/trainer-hub.js';
import { buildControlServices, type ControlServices } from './assembly/control-services.js';
import { buildCoreServices, type CoreServices } from './assembly/core-services.js';
import { createGatewayServer } from './assembly/gateway-server.js';
import { GatewayParts } from './assembly/parts.js';
import { ThinkingSignatures } from './gateway/anthropic/thinking-signature.js';
import { responsesModeLookup } from './gateway/responses-via-chat/mode.js';
import type { Logger } from './logger.js';
import { createPinoLogger } from './pino-logger.js';
import type { LightningStore } from './store/core/types.js';

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

export async function createGateway(config: RollgateConfig, options: CreateGatewayOptions = {}): Promise<Gateway> {
  const parts = new GatewayParts();
  try {
    return await assembleGateway({ config, options, parts });
  } catch (error) {
    // A part that fails to build must not leave the ones before it (store files, timers, sockets) open.
    await parts.closeQuietly();
    throw error;
  }
}

async function assembleGateway(assembly: {
  readonly config: RollgateConfig;
  readonly options: CreateGatewayOptions;
  readonly parts: GatewayParts;
}): Promise<Gateway> {
  const { config, options, parts } = assembly;
  const logger = options.logger ?? createPinoLogger({ level: config.logging.level });
  const core = await buildCoreServices({ config, logger, store: options.store, parts });
  const control = await buildControlServices({ config, core, parts });
  // Every call is routed: the match of a path seen before is remembered (middleware/cached-router.ts).
  const app = new Hono<AppEnv>({ router: new CachedRouter() });
  useMiddleware({ app, config, core, control });
  mountRoutes({ app, config, core, control });
  const server = createGatewayServer({ fetch: app.fetch, config, logger, shutdown: core.shutdown, parts });
  return {
    app,
    store: core.store,
    config,
    logger,
    rlHub: control.rlHub,
    listen: () => server.listen(),
    close: () => server.close(),
  };
}

interface AppAssembly {
  readonly app: Hono<AppEnv>;
  readonly config: RollgateConfig;
  readonly core: CoreServices;
  readonly control: ControlServices;
}

function useMiddleware({ app, config, core, control }: AppAssembly): void {
  const { logger, metrics } = core;
  const { keys } = control;
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
}

/** One mount line per route module. */
function mountRoutes({ app, config, core, control }: AppAssembly): void {
  const { store, attribution, pools, readiness, metrics, shutdown } = core;
  const { gate, fleet, keys, rlHub, ingester, resubmitBook, routesEngine } = control;
  // Liveness only: a restart fixes none of what /ready reports (a gateway restarted on a deleted database file
  // would only start on an empty one).
  app.get('/health', (c) => c.json({ status: 'ok' }));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.route('/', createStoreApiRoutes({ store, shutdown: shutdown.signal }));
  app.route('/', createStoreAggregateRoutes({ store }));
  app.route('/', createOtlpRoutes({ ingester, maxBodyBytes: config.server.bodyLimitBytes }));
  // Before the OpenAI routes: their catch-all refuses unknown paths under the prefix, and /v1/models falls through
  // to them unless the caller is an Anthropic client.
  // Derived from the configured keys: replicas with one config, and restarts, accept each other's signatures.
  const signatures = ThinkingSignatures.fromKeys([...config.auth.adminKeys, ...config.auth.agentKeys]);
  app.route('/', createAnthropicRoutes({ engine: routesEngine(), registry: pools, store, attribution, signatures }));
  app.route(
    '/',
    createOpenAiRoutes({
      engine: routesEngine(),
      store,
      attribution,
      responsesMode: responsesModeLookup(config.models),
    }),
  );
  app.route('/', createAdminRoutes({ pools, gate, fleet, keys, readiness, resubmitBook }));
  app.route(
    '/',
    createAglV1Routes({
      store,
      engine: routesEngine(),
      gate,
      // v1's /proxy/pause and /proxy/resume pause the whole fleet, as /admin/pause does.
      fleetPause: { pause: (request) => fleet.pause(request), resume: () => fleet.resume() },
      // A v1 trainer's model registration moves the pool on every replica, as PUT /admin/pools does.
      pools: { snapshot: () => pools.snapshot(), replace: (model, request) => fleet.replacePool(model, request) },
      trainTemperature: config.aglV1.trainTemperature,
      valTemperature: config.aglV1.valTemperature,
      attribution,
    }),
  );
  app.route('/', createMetricsRoutes({ metrics }));
  app.route('/', createRlRoutes({ hub: rlHub, shutdown: shutdown.signal }));
  app.route('/', createDashboardRoutes());
}
