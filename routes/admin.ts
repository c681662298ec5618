// Operator routes for weight updates and fleet state (docs/agl-v1.md, docs/routing.md):
//   GET  /ready                           200 when every pool has a healthy backend and the store can write
//                                         (public), else 503 with the reason
//   POST /admin/pause                     {retry_after_seconds?, reason?} -> pause state
//   POST /admin/resume                    -> pause state
//   GET  /admin/state                     -> pause state (inflight drops only when upstream responses close) and
//                                         the fleet record's revision seen here (docs/store.md)
//   POST /admin/drain                     {timeout_seconds?} -> waits until inflight == 0 (or the timeout), state
//   GET  /admin/pools                     pools with health, in-flight counts and versions
//   PUT  /admin/pools/:model              {version, backends[], frozen_backends?, resident_versions?} -> atomic
//                                         replace, no window with an empty pool (frozen_backends: engines frozen by a
//                                         keep-mode weight swap; resident_versions: adapters still loaded)
//   POST /admin/pools/:model/draining     {url, draining} -> one backend out of (or back into) rotation
//   POST /admin/pools/:model/drain        {url, timeout_seconds?} -> waits until no call is in flight on that backend
//   POST /admin/pools/:model/resubmit     -> {marked}: the pool's calls in flight are sent again if their answer comes
//                                         back aborted (an abort-resubmit weight swap is about to abort them)
//   POST /admin/agent-tokens              {rollout_id, attempt_id?, ttl_seconds?} -> {token, expires_at, ...}: a
//                                         short-lived token for that rollout (and attempt) only (docs/security.md)
// Scopes are decided by middleware/auth.ts (everything under /admin needs an admin key, agent-tokens a runner or
// admin key; /ready is public).
import { Hono } from 'hono';
import { z } from 'zod';
import { MAX_AGENT_TOKEN_TTL_SECONDS } from '../config/schema.js';
import type { AppEnv } from '../middleware/env.js';
import type { KeyRing } from '../src/auth/keys.js';
import { isGatewayError } from '../src/errors.js';
import type { PoolRegistry } from '../src/gateway/pools/model-pool.js';
import type { FleetSync } from '../src/gateway/swap/fleet-sync.js';
import type { PauseGate } from '../src/gateway/swap/pause-gate.js';
import type { ResubmitBook } from '../src/gateway/swap/swap-resubmit.js';
import type { Readiness } from '../src/readiness.js';
import { idSchema, parseRequest, readJsonBody } from './request-body.js';

export interface AdminRoutesOptions {
  readonly pools: PoolRegistry;
  readonly gate: PauseGate;
  /** Pool updates, pauses and resumes go through it, so every replica of the store takes them. */
  readonly fleet: FleetSync;
  readonly keys: KeyRing;
  /** The store's write health and shutdown (src/readiness.ts); without it only the pools decide. */
  readonly readiness?: Readiness;
  /** The calls an abort-resubmit weight swap marks (src/gateway/swap/swap-resubmit.ts); without it the route is 404. */
  readonly resubmitBook?: ResubmitBook;
}

const pauseBody = z
  .object({
    retry_after_seconds: z.int().min(0).max(3600).optional(),
    reason: z.string().max(1000).nullable().optional(),
  })
  .strict();

const drainBody = z.object({ timeout_seconds: z.number().min(0).max(3600).default(30) }).strict();

const backendBody = z
  .object({
    url: z.url(),
    type: z.enum(['vllm', 'sglang', 'openai']).default('vllm'),
    apiKey: z.string().optional(),
  })
  .strict();

const replaceBody = z
  .object({
    version: z.int().min(0),
    backends: z.array(backendBody).min(1),
    /** Backends whose engines are frozen (keep-mode pause) during the replace (docs/weight-swaps.md). */
    frozen_backends: z.array(z.string().min(1)).optional(),
    /** Versioned adapters: the versions the engines still hold (docs/weight-swaps.md). */
    resident_versions: z.array(z.int().min(0)).optional(),
  })
  .strict();

const drainingBody = z.object({ url: z.string().min(1), draining: z.boolean() }).strict();

const heldBody = z.object({ backends: z.array(z.string().min(1)).max(1000) }).strict();

const backendDrainBody = z
  .object({ url: z.string().min(1), timeout_seconds: z.number().min(0).max(3600).default(30) })
  .strict();

const tokenBody = z
  .object({
    rollout_id: idSchema,
    /** Binds the token to one attempt too; the runner mints one per attempt. */
    attempt_id: idSchema.nullish(),
    /** Defaults to `auth.agentTokenTtlSeconds`. */
    ttl_seconds: z.int().min(1).max(MAX_AGENT_TOKEN_TTL_SECONDS).optional(),
  })
  .strict();

export function createAdminRoutes(options: AdminRoutesOptions): Hono<AppEnv> {
  const { pools, gate, fleet, keys } = options;
  const app = new Hono<AppEnv>();
  // `inflight` counts calls holding a gate slot; `upstream_inflight` counts open upstream responses per backend,
  // retiring backends included, so a trainer can see that no old-version server is still answering.
  const state = () => ({
    ...gate.state(),
    fleet: fleet.view(),
    upstream_inflight: pools
      .snapshot()
      .reduce((n, pool) => n + [...pool.backends, ...pool.retiring].reduce((m, b) => m + b.inflight, 0), 0),
  });

  app.get('/ready', async (c) => {
    const poolsReady = pools.ready();
    const report = await options.readiness?.check();
    const ready = poolsReady && report?.ready !== false;
    const reason =
      report?.ready === false
        ? report.reason
        : poolsReady
          ? undefined
          : (pools.fenced() ?? 'a pool has no healthy backend');
    const body = {
      ready,
      ...(reason === undefined ? {} : { reason }),
      ...(report === undefined ? {} : { store: report.store }),
      pools: pools.snapshot().map((pool) => ({
        model: pool.model,
        version: pool.version,
        up: pool.backends.filter((b) => b.healthy && !b.draining).map((b) => b.url),
        down: pool.backends.filter((b) => !b.healthy || b.draining).map((b) => b.url),
      })),
    };
    return c.json(body, ready ? 200 : 503);
  });

  app.post('/admin/pause', async (c) => {
    const body = parseRequest(pauseBody, await readJsonBody(c));
    const paused = await fleet.pause({
      ...(body.retry_after_seconds === undefined ? {} : { retryAfterSeconds: body.retry_after_seconds }),
      reason: body.reason ?? null,
    });
    c.get('logger').info('gateway paused', { reason: paused.reason, inflight: paused.inflight });
    return c.json(state());
  });

  app.post('/admin/resume', async (c) => {
    const resumed = await fleet.resume();
    c.get('logger').info('gateway resumed', { inflight: resumed.inflight });
    return c.json(state());
  });

  app.get('/admin/state', (c) => c.json(state()));

  app.post('/admin/drain', async (c) => {
    const body = parseRequest(drainBody, await readJsonBody(c));
    const signal = AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(body.timeout_seconds * 1000)]);
    const drained = await gate.waitForDrain(signal).then(
      () => true,
      () => false,
    );
    return c.json({ ...state(), drained });
  });

  app.get('/admin/pools', (c) => c.json({ pools: pools.snapshot(), fleet: fleet.view() }));

  app.put('/admin/pools/:model', async (c) => {
    const { frozen_backends, resident_versions, ...body } = parseRequest(replaceBody, await readJsonBody(c));
    const snapshot = await fleet.replacePool(c.req.param('model'), {
      ...body,
      ...(frozen_backends === undefined ? {} : { frozen: frozen_backends }),
      ...(resident_versions === undefined ? {} : { resident: resident_versions }),
    });
    c.get('logger').info('pool replaced', { model: snapshot.model, version: snapshot.version });
    return c.json(snapshot);
  });

  app.post('/admin/pools/:model/draining', async (c) => {
    const body = parseRequest(drainingBody, await readJsonBody(c));
    return c.json(pools.setDraining({ model: c.req.param('model'), url: body.url, draining: body.draining }));
  });

  // A weight swap names the backends it holds paused or asleep, and [] once they resume (docs/weight-swaps.md).
  app.put('/admin/pools/:model/held', async (c) => {
    const body = parseRequest(heldBody, await readJsonBody(c));
    const model = c.req.param('model');
    pools.setHeld({ model, urls: body.backends });
    return c.json({ model, held: body.backends });
  });

  // A keep-mode weight swap drains only the backends it cannot freeze (docs/weight-swaps.md).
  app.post('/admin/pools/:model/drain', async (c) => {
    const body = parseRequest(backendDrainBody, await readJsonBody(c));
    const model = c.req.param('model');
    const signal = AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(body.timeout_seconds * 1000)]);
    const drained = await pools.waitForIdle({ model, url: body.url, signal }).then(
      () => true,
      (error: unknown) => {
        if (isGatewayError(error)) throw error;
        return false;
      },
    );
    const backend = pools
      .snapshot()
      .find((p) => p.model === model)
      ?.backends.find((b) => b.url === body.url);
    return c.json({ model, url: body.url, drained, inflight: backend?.inflight ?? 0 });
  });

  const resubmitBook = options.resubmitBook;
  if (resubmitBook !== undefined) {
    app.post('/admin/pools/:model/resubmit', (c) => {
      const model = c.req.param('model');
      const marked = resubmitBook.mark(model);
      c.get('logger').info('calls in flight marked for resubmission', { model, marked });
      return c.json({ model, marked });
    });
  }

  app.post('/admin/agent-tokens', async (c) => {
    const body = parseRequest(tokenBody, await readJsonBody(c));
    const minted = keys.mintAgentToken({
      rolloutId: body.rollout_id,
      attemptId: body.attempt_id ?? null,
      ...(body.ttl_seconds !== undefined ? { ttlSeconds: body.ttl_seconds } : {}),
    });
    return c.json({
      rollout_id: minted.rolloutId,
      attempt_id: minted.attemptId,
      token: minted.token,
      expires_at: minted.expiresAt,
    });
  });

  return app;
}
