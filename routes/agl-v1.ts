// agent-lightning v1 compatibility surface (contracts.md §7), mapped onto the one rollgate store:
//   POST   /proxy/rollout/:rid/attempt/:aid/mode/:mode/openai/v1/{chat/completions|completions}
//   POST   /proxy/pause · POST /proxy/resume · GET /proxy/state      (the same PauseGate as /admin/*)
//   POST   /api/rollouts · GET /api/rollouts?state_in=… · GET /api/rollouts/terminal?after=&limit=
//   GET    /api/rollouts/:rid · PATCH /api/rollouts/:rid · DELETE /api/rollouts/:rid
//   POST   /api/rollouts/:rid/attempt/:aid/events · GET /api/rollouts/:rid/events?event_type=&format=triplet
//   POST   /api/models · GET /api/models · DELETE /api/models
// Differences a v1 client can see: streaming works on the proxy; errors are OpenAI-shaped and also carry v1's
// `detail`; unknown modes/paths are 404 like v1. Scopes are decided by middleware/auth.ts.
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { type Context, Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import { renderError } from '../middleware/openai-errors.js';
import { eventSpan, spanToEvent, type V1Event } from '../src/agl-v1/events.js';
import { KeyedLock } from '../src/agl-v1/keyed-lock.js';
import {
  canTransition,
  dataIdOf,
  newV1Metadata,
  toV1Rollout,
  type V1Rollout,
  type V1State,
  v1StateOf,
  withV1Status,
} from '../src/agl-v1/rollout-map.js';
import { toTripletEvents } from '../src/agl-v1/triplet.js';
import { GatewayError } from '../src/errors.js';
import type { Endpoint } from '../src/gateway/call-capture.js';
import type { Gateway } from '../src/gateway/forward.js';
import { HEADER_STAINLESS_RETRY_COUNT } from '../src/gateway/headers.js';
import type { PoolRegistry } from '../src/gateway/model-pool.js';
import type { PauseGate } from '../src/gateway/pause-gate.js';
import { StoreError } from '../src/store/errors.js';
import { isTerminalStatus } from '../src/store/rollout-status.js';
import type { AttemptedRollout, JsonObject, LightningStore, Rollout, RolloutStatus } from '../src/store/types.js';
import {
  eventBodySchema,
  eventsQuerySchema,
  listQuerySchema,
  modelsBodySchema,
  pauseBodySchema,
  rolloutCreateSchema,
  rolloutPatchSchema,
  terminalQuerySchema,
} from './agl-v1-schemas.js';
import { parseRequest, readJsonBody } from './request-body.js';

type V1Env = {
  Bindings: Partial<HttpBindings>;
  Variables: AppEnv['Variables'];
};

export interface AglV1RoutesOptions {
  readonly store: LightningStore;
  /** The main proxy's forward path, already behind the pause gate (so both routes share one gate). */
  readonly gateway: Gateway;
  readonly gate: PauseGate;
  /** Pools that `/api/models` registrations replace atomically (by model name); others are only listed. */
  readonly pools?: Pick<PoolRegistry, 'snapshot' | 'replace'>;
  /** v1 `default_proxy.train.temperature` (default 1). */
  readonly trainTemperature?: number;
  /** v1 `default_proxy.val.temperature` (default 0.7). */
  readonly valTemperature?: number;
  /** Told after `DELETE /api/rollouts/{rid}`, so in-process caches of the rollout are dropped (pitfall 50). */
  readonly onRolloutDeleted?: (rid: string) => void;
}

export interface V1Model {
  model: string;
  endpoint: string;
  version: number;
}

const MODES = { train: 'train', val: 'val' } as const;
const UPSTREAM_PATHS: Readonly<Record<string, Endpoint>> = { 'chat/completions': 'chat', completions: 'completions' };
const DEFAULT_ATTEMPT_ID = '0';
const RETRY_COUNT = /^\d{1,4}$/;

/** v1 states to the store statuses that may currently show as that state (see rollout-map.ts). */
const STATUSES_FOR_STATE: Readonly<Record<V1State, readonly RolloutStatus[]>> = {
  queuing: ['queuing', 'requeuing', 'preparing', 'running'],
  running: ['preparing', 'running'],
  succeeded: ['succeeded'],
  failed: ['failed', 'cancelled'],
};

function rolloutNotFound(rid: string): GatewayError {
  return new GatewayError('rollout_not_found', `Rollout not found: ${rid}`, { param: 'rollout_id' });
}

export function createAglV1Routes(options: AglV1RoutesOptions): Hono<V1Env> {
  const { store, gateway, gate } = options;
  const temperatures = { train: options.trainTemperature ?? 1, val: options.valTemperature ?? 0.7 };
  const app = new Hono<V1Env>();
  const rolloutLock = new KeyedLock();
  const models = new Map<string, V1Model>();

  // v1 clients read FastAPI's `{"detail": …}`; rollgate's OpenAI-shaped body stays, with `detail` added.
  app.onError(async (error, c) => {
    // Only Bindings differ between the two env types; the error renderer never reads them.
    const rendered = renderError(c as unknown as Context<AppEnv>, error);
    const body = (await rendered.json()) as { error?: { message?: string } };
    const headers = new Headers(rendered.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify({ ...body, detail: body.error?.message ?? 'Request failed' }), {
      status: rendered.status,
      headers,
    });
  });

  async function requireRollout(rid: string): Promise<Rollout | AttemptedRollout> {
    const rollout = await store.getRolloutById(rid);
    if (rollout === null) throw rolloutNotFound(rid);
    return rollout;
  }

  /**
   * The store attempt a v1 call or event belongs to. v1 has no attempts of its own: the first call or event
   * under an attempt id starts it. A finished rollout does not start new attempts (that would reopen it and
   * log a second completion): its existing attempts are still recorded, an unknown one is a 409. Starting runs
   * under the rollout's lock, so it cannot interleave with a PATCH that finishes the rollout.
   */
  async function ensureAttempt(rid: string, aid: string): Promise<string> {
    const rollout = await requireRollout(rid);
    if ('attempt' in rollout && rollout.attempt.attempt_id === aid) return aid;
    return rolloutLock.run(rid, () => ensureAttemptLocked(rid, aid));
  }

  async function ensureAttemptLocked(rid: string, aid: string): Promise<string> {
    const rollout = await requireRollout(rid);
    if ('attempt' in rollout && rollout.attempt.attempt_id === aid) return aid;
    const attempts = await store.queryAttempts(rid);
    if (attempts.items.some((attempt) => attempt.attempt_id === aid)) return aid;
    if (isTerminalStatus(rollout.status)) {
      throw new StoreError('conflict', `Rollout ${rid} is ${rollout.status}; attempt ${aid} cannot start`, {
        param: 'attempt_id',
      });
    }
    await store.startAttempt(rid, { attempt_id: aid });
    return aid;
  }

  // ---- proxy ----------------------------------------------------------------------------------------------

  app.post('/proxy/rollout/:rid/attempt/:aid/mode/:mode/openai/v1/:upstream{.+}', async (c) => {
    const modeParam = c.req.param('mode');
    const mode = modeParam === MODES.train || modeParam === MODES.val ? modeParam : null;
    if (mode === null) throw new GatewayError('unsupported_path', `Unsupported proxy mode: ${modeParam}`);
    const upstream = c.req.param('upstream');
    const endpoint = UPSTREAM_PATHS[upstream];
    if (endpoint === undefined) throw new GatewayError('unsupported_path', `Unsupported upstream path: ${upstream}`);
    const rid = c.req.param('rid');
    const aid = c.req.param('aid');
    const raw = await readJsonBody(c);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new GatewayError('invalid_json', 'The request body must be a JSON object');
    }
    const sink = c.env.outgoing;
    if (sink === undefined) throw new GatewayError('internal_error', 'The proxy needs a node HTTP server');
    const attemptId = await ensureAttempt(rid, aid);
    const seq = await store.nextSequenceId(rid, attemptId);
    const body = raw as Record<string, unknown>;
    // v1 sends every call to its one pool whatever the agent names ("auto"): a name that is not a served
    // model goes to the first pool; the rewrite records the client's value in rollgate.request.overrides.
    const served = gateway.listModels().map((m) => m.id);
    const first = served[0];
    const poolModel = served.includes(String(body.model)) || first === undefined ? undefined : first;
    const retry = c.req.header(HEADER_STAINLESS_RETRY_COUNT);
    await gateway.forward({
      endpoint,
      body,
      ...(poolModel === undefined ? {} : { poolModel }),
      attribution: { rid, aid: attemptId, seq },
      mode,
      forcedBody: { temperature: temperatures[mode] },
      requestId: c.get('requestId'),
      clientRetryCount: retry !== undefined && RETRY_COUNT.test(retry) ? Number(retry) : null,
      sink,
    });
    return RESPONSE_ALREADY_SENT;
  });

  // ---- pause / resume / state ---------------------------------------------------------------------------

  app.post('/proxy/pause', async (c) => {
    const body = parseRequest(pauseBodySchema, await readJsonBody(c));
    const state = gate.pause({ retryAfterSeconds: body.retry_after_seconds, reason: body.reason ?? null });
    c.get('logger').info('gateway paused', { reason: state.reason, inflight: state.inflight });
    return c.json(state);
  });
  app.post('/proxy/resume', (c) => {
    const state = gate.resume();
    c.get('logger').info('gateway resumed', { inflight: state.inflight });
    return c.json(state);
  });
  app.get('/proxy/state', (c) => c.json(gate.state()));

  // ---- rollouts -----------------------------------------------------------------------------------------

  app.post('/api/rollouts', async (c) => {
    const creates = parseRequest(rolloutCreateSchema, await readJsonBody(c));
    const out: V1Rollout[] = [];
    for (const create of creates) {
      // Idempotent by id: an existing rollout comes back unchanged, with its events.
      const existing = create.rollout_id == null ? null : await store.getRolloutById(create.rollout_id);
      if (existing !== null) {
        out.push(toV1Rollout(existing));
        continue;
      }
      const rollout = await store.enqueueRollout({
        input: create.input,
        mode: create.is_train ? 'train' : 'val',
        metadata: newV1Metadata(
          {
            input: create.input,
            is_train: create.is_train,
            config: create.config ?? undefined,
            metadata: create.metadata ?? undefined,
          },
          new Date(),
        ),
        ...(create.rollout_id == null ? {} : { rollout_id: create.rollout_id }),
      });
      out.push(toV1Rollout(rollout));
    }
    return c.json(out, 201);
  });

  app.get('/api/rollouts', async (c) => {
    const query = parseRequest(listQuerySchema, {
      state_in: [...(c.req.queries('state_in') ?? []), ...(c.req.queries('state_in[]') ?? [])],
      limit: c.req.query('limit'),
    });
    // v1 slices like Python (`[:-1]` for -1); rollgate refuses a limit that is not positive (pitfall 67).
    if (query.limit < 1) throw new GatewayError('invalid_request', 'limit must be >= 1', { param: 'limit' });
    const states = new Set<V1State>(query.state_in);
    const statuses = new Set<RolloutStatus>([...states].flatMap((s) => STATUSES_FOR_STATE[s]));
    const page = await store.queryRollouts({ status_in: [...statuses] });
    const items = page.items
      .map((r) => toV1Rollout(r))
      .filter((r) => states.has(r.status.state))
      .slice(0, query.limit);
    return c.json(items);
  });

  app.get('/api/rollouts/terminal', async (c) => {
    const query = parseRequest(terminalQuerySchema, { after: c.req.query('after'), limit: c.req.query('limit') });
    // v1 clamps rather than refuses here.
    const page = await store.queryCompletions({ after: Math.max(0, query.after), limit: Math.max(1, query.limit) });
    const live = page.items.filter((entry) => !entry.deleted);
    const rollouts = new Map<string, Rollout>();
    if (live.length > 0) {
      const found = await store.queryRollouts({ rollout_id_in: [...new Set(live.map((e) => e.rollout_id))] });
      for (const r of found.items) rollouts.set(r.rollout_id, r);
    }
    const items = [];
    for (const entry of live) {
      const rollout = rollouts.get(entry.rollout_id);
      // Deleted between the log read and this lookup: skipped like a tombstone; the cursor still moves on.
      if (rollout === undefined) continue;
      items.push({
        rollout_id: entry.rollout_id,
        state: v1StateOf(entry.status),
        data_id: dataIdOf(rollout.input),
        is_train: toV1Rollout(rollout).is_train,
      });
    }
    return c.json({ items, next_after: page.next_after, total_terminal: page.total });
  });

  app.get('/api/rollouts/:rid', async (c) => {
    const rid = c.req.param('rid');
    const rollout = await requireRollout(rid);
    const attempts = await store.queryAttempts(rid);
    return c.json({ rollout: toV1Rollout(rollout), attempts: attempts.items.map((a) => a.attempt_id) });
  });

  app.patch('/api/rollouts/:rid', async (c) => {
    const rid = c.req.param('rid');
    const patch = parseRequest(rolloutPatchSchema, await readJsonBody(c)).status;
    return rolloutLock.run(rid, async () => {
      const rollout = await requireRollout(rid);
      const current = toV1Rollout(rollout);
      if (patch == null || Object.keys(patch).length === 0) return c.json(current);
      const from = current.status.state;
      const to = patch.state;
      if (to !== undefined && !canTransition(from, to)) {
        throw new StoreError('conflict', `Rollout ${rid}: cannot transition ${from} -> ${to}`, { param: 'state' });
      }
      const status = {
        ...current.status,
        ...(patch.k8s_job_name === undefined ? {} : { k8s_job_name: patch.k8s_job_name }),
        ...(patch.last_attempt_id === undefined ? {} : { last_attempt_id: patch.last_attempt_id }),
        ...(patch.error_message === undefined ? {} : { error_message: patch.error_message }),
        state: to ?? from,
        version: current.status.version + 1,
        updated_at: new Date().toISOString(),
      };
      if (to === 'running') await ensureAttemptLocked(rid, status.last_attempt_id ?? DEFAULT_ATTEMPT_ID);
      // Re-read: starting the attempt changed the stored rollout.
      const base = to === 'running' ? await requireRollout(rid) : rollout;
      const metadata: JsonObject = withV1Status(base, status);
      const updated =
        to === 'succeeded' || to === 'failed'
          ? await store.updateRollout(rid, { status: to, metadata })
          : await store.updateRollout(rid, { metadata });
      return c.json(toV1Rollout(updated));
    });
  });

  app.delete('/api/rollouts/:rid', async (c) => {
    const rid = c.req.param('rid');
    await store.deleteRollout(rid);
    options.onRolloutDeleted?.(rid);
    return c.body(null, 204);
  });

  // ---- events -------------------------------------------------------------------------------------------

  app.post('/api/rollouts/:rid/attempt/:aid/events', async (c) => {
    const rid = c.req.param('rid');
    const body = parseRequest(eventBodySchema, await readJsonBody(c));
    const attemptId = await ensureAttempt(rid, c.req.param('aid'));
    const span = eventSpan({
      rolloutId: rid,
      attemptId,
      eventType: body.event_type,
      data: body.data ?? {},
      now: Date.now() / 1000,
    });
    const stored = await store.addSpan(span);
    const event = stored === null ? null : spanToEvent(stored);
    if (event === null) throw new StoreError('conflict', 'The event collided with an existing span id');
    return c.json(event);
  });

  app.get('/api/rollouts/:rid/events', async (c) => {
    const rid = c.req.param('rid');
    const query = parseRequest(eventsQuerySchema, {
      event_type: c.req.query('event_type'),
      format: c.req.query('format'),
    });
    const rollout = toV1Rollout(await requireRollout(rid));
    const attemptId = rollout.status.last_attempt_id ?? DEFAULT_ATTEMPT_ID;
    const spans = await store.querySpans(rid, { attempt_id: attemptId });
    let events: V1Event[] = [];
    for (const span of spans.items) {
      const event = spanToEvent(span);
      if (event !== null) events.push(event);
    }
    if (query.format === 'triplet') events = toTripletEvents(events);
    if (query.event_type !== undefined) events = events.filter((e) => e.event_type === query.event_type);
    return c.json(events);
  });

  // ---- models -------------------------------------------------------------------------------------------

  app.post('/api/models', async (c) => {
    const registered = parseRequest(modelsBodySchema, await readJsonBody(c));
    for (const entry of registered) models.set(`${entry.model}\u0000${entry.endpoint}`, entry);
    const pools = options.pools;
    if (pools !== undefined) {
      const served = new Set(pools.snapshot().map((p) => p.model));
      for (const name of new Set(registered.map((e) => e.model))) {
        if (!served.has(name)) continue;
        const entries = [...models.values()].filter((e) => e.model === name);
        // One atomic swap per pool: no window without backends (pitfall 48); spans carry the version.
        await pools.replace(name, {
          version: Math.max(...entries.map((e) => e.version)),
          backends: entries.map((e) => ({ url: e.endpoint, type: 'vllm' as const })),
        });
      }
    }
    return c.json(registered, 201);
  });
  app.get('/api/models', (c) => c.json([...models.values()]));
  // Clears the v1 list only: pools keep their backends until the next registration swaps them atomically.
  app.delete('/api/models', (c) => {
    models.clear();
    return c.json({ status: 'ok' });
  });

  return app;
}
