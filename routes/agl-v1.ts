// agent-lightning v1 compatibility surface (docs/agl-v1.md), mapped onto the one rollgate store:
//   POST   /proxy/rollout/:rid/attempt/:aid/mode/:mode/openai/v1/{chat/completions|completions}
//   POST   /proxy/pause · POST /proxy/resume · GET /proxy/state      (the same PauseGate as /admin/*)
//   POST   /api/rollouts · GET /api/rollouts?state_in=… · GET /api/rollouts/terminal?after=&limit=
//   GET    /api/rollouts/:rid · PATCH /api/rollouts/:rid · DELETE /api/rollouts/:rid
//   POST   /api/rollouts/:rid/attempt/:aid/events · GET /api/rollouts/:rid/events?event_type=&format=triplet
//   POST   /api/models · GET /api/models · DELETE /api/models
// Differences a v1 client can see: streaming works on the proxy; errors are OpenAI-shaped and also carry v1's
// `detail` (middleware/agl-v1-errors.ts); unknown modes/paths are 404 like v1. Scopes are decided by
// middleware/auth.ts. Thin: the v1 semantics live in src/agl-v1/ (v1-rollouts.ts, v1-models.ts).
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import { HEADER_NEXT_OFFSET, listV1Rollouts } from '../src/agl-v1/list-rollouts.js';
import { V1ModelRegistry, type V1Pools } from '../src/agl-v1/v1-models.js';
import { V1Rollouts } from '../src/agl-v1/v1-rollouts.js';
import type { RolloutAttribution } from '../src/attribution/rollout-attribution.js';
import type { Endpoint } from '../src/contracts/call-record.js';
import { GatewayError } from '../src/errors.js';
import type { ForwardEngine } from '../src/gateway/engine/forward-engine.js';
import { validateRequestNumbers } from '../src/gateway/request/sampling-numbers.js';
import type { PauseGate, PauseState } from '../src/gateway/swap/pause-gate.js';
import { HEADER_STAINLESS_RETRY_COUNT } from '../src/gateway/upstream/headers.js';
import { COMPLETIONS_MAX_PAGE, V1_LIST_MAX_PAGE } from '../src/store/core/page-limits.js';
import type { LightningStore } from '../src/store/core/types.js';
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
import { jsonInSlices } from './json-in-slices.js';
import { parseRequest, readJsonBody } from './request-body.js';

type V1Env = {
  Bindings: Partial<HttpBindings>;
  Variables: AppEnv['Variables'];
};

export interface AglV1RoutesOptions {
  readonly store: LightningStore;
  /** The main proxy's forward path, already behind the pause gate (so both routes share one gate). */
  readonly engine: ForwardEngine;
  readonly gate: PauseGate;
  /**
   * Pauses and resumes the whole fleet (every replica on the store), as /admin/pause does; absent: this gateway's
   * gate only (one process).
   */
  readonly fleetPause?: FleetPause;
  /** Pools that `/api/models` registrations replace atomically (by model name); others are only listed. */
  readonly pools?: V1Pools;
  /** v1 `default_proxy.train.temperature` (default 1). */
  readonly trainTemperature?: number;
  /** v1 `default_proxy.val.temperature` (default 0.7). */
  readonly valTemperature?: number;
  /** The gateway's one attribution service: v1 calls and events start their attempts through it. */
  readonly attribution: RolloutAttribution;
}

export interface FleetPause {
  pause(options: { retryAfterSeconds?: number; reason: string | null }): Promise<PauseState>;
  resume(): Promise<PauseState>;
}

const MODES = { train: 'train', val: 'val' } as const;
const UPSTREAM_PATHS: Readonly<Record<string, Endpoint>> = { 'chat/completions': 'chat', completions: 'completions' };
const RETRY_COUNT = /^\d{1,4}$/;

export function createAglV1Routes(options: AglV1RoutesOptions): Hono<V1Env> {
  const { store, engine, gate, attribution } = options;
  const fleetPause: FleetPause = options.fleetPause ?? {
    pause: async (request) => gate.pause(request),
    resume: async () => gate.resume(),
  };
  const temperatures = { train: options.trainTemperature ?? 1, val: options.valTemperature ?? 0.7 };
  const app = new Hono<V1Env>();
  const rollouts = new V1Rollouts({ store, attribution });
  const models = new V1ModelRegistry(options.pools === undefined ? {} : { pools: options.pools });

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
    const body = raw as Record<string, unknown>;
    validateRequestNumbers(body, endpoint);
    const { aid: attemptId, seq } = await rollouts.attributeCall(rid, aid);
    // v1 sends every call to its one pool whatever the agent names ("auto"): a name that is not a served
    // model goes to the first pool; the rewrite records the client's value in rollgate.request.overrides.
    const served = engine.listModels().map((m) => m.id);
    const first = served[0];
    const poolModel = served.includes(String(body.model)) || first === undefined ? undefined : first;
    const retry = c.req.header(HEADER_STAINLESS_RETRY_COUNT);
    await engine.forward({
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
    const state = await fleetPause.pause({
      ...(body.retry_after_seconds === undefined ? {} : { retryAfterSeconds: body.retry_after_seconds }),
      reason: body.reason ?? null,
    });
    c.get('logger').info('gateway paused', { reason: state.reason, inflight: state.inflight });
    return c.json(state);
  });
  app.post('/proxy/resume', async (c) => {
    const state = await fleetPause.resume();
    c.get('logger').info('gateway resumed', { inflight: state.inflight });
    return c.json(state);
  });
  app.get('/proxy/state', (c) => c.json(gate.state()));

  // ---- rollouts -----------------------------------------------------------------------------------------

  app.post('/api/rollouts', async (c) =>
    c.json(await rollouts.create(parseRequest(rolloutCreateSchema, await readJsonBody(c))), 201),
  );

  app.get('/api/rollouts', async (c) => {
    const query = parseRequest(listQuerySchema, {
      state_in: [...(c.req.queries('state_in') ?? []), ...(c.req.queries('state_in[]') ?? [])],
      limit: c.req.query('limit'),
      offset: c.req.query('offset'),
    });
    // v1 slices like Python (`[:-1]` for -1); rollgate refuses a limit that is not positive (docs/failure-classes.md#67), and one
    // above the page size, so a request never builds more than one page.
    if (query.limit < 1 || query.limit > V1_LIST_MAX_PAGE) {
      throw new GatewayError('invalid_request', `limit must be between 1 and ${V1_LIST_MAX_PAGE}`, {
        param: 'limit',
      });
    }
    if (query.offset < 0) throw new GatewayError('invalid_request', 'offset must be >= 0', { param: 'offset' });
    const page = await listV1Rollouts(store, {
      states: new Set(query.state_in),
      limit: query.limit,
      offset: query.offset,
    });
    // v1's answer is a bare list, so the cursor travels in a header: absent when nothing is left.
    if (page.nextOffset !== null) c.header(HEADER_NEXT_OFFSET, String(page.nextOffset));
    return c.json(page.items);
  });

  app.get('/api/rollouts/terminal', async (c) => {
    const query = parseRequest(terminalQuerySchema, { after: c.req.query('after'), limit: c.req.query('limit') });
    // v1 clamps rather than refuses here.
    const limit = Math.min(COMPLETIONS_MAX_PAGE, Math.max(1, query.limit));
    return c.json(await rollouts.terminal({ after: Math.max(0, query.after), limit }));
  });

  app.get('/api/rollouts/:rid', async (c) => c.json(await rollouts.get(c.req.param('rid'))));

  app.patch('/api/rollouts/:rid', async (c) => {
    const patch = parseRequest(rolloutPatchSchema, await readJsonBody(c)).status;
    return c.json(await rollouts.patch(c.req.param('rid'), patch));
  });

  app.delete('/api/rollouts/:rid', async (c) => {
    const rid = c.req.param('rid');
    await store.deleteRollout(rid);
    return c.body(null, 204);
  });

  // ---- events -------------------------------------------------------------------------------------------

  app.post('/api/rollouts/:rid/attempt/:aid/events', async (c) => {
    const body = parseRequest(eventBodySchema, await readJsonBody(c));
    const event = await rollouts.addEvent(c.req.param('rid'), c.req.param('aid'), {
      eventType: body.event_type,
      data: body.data ?? {},
    });
    return c.json(event);
  });

  app.get('/api/rollouts/:rid/events', async (c) => {
    const query = parseRequest(eventsQuerySchema, {
      event_type: c.req.query('event_type'),
      format: c.req.query('format'),
    });
    // An attempt may hold thousands of events: written in slices (routes/json-in-slices.ts).
    return jsonInSlices(
      c,
      await rollouts.events(c.req.param('rid'), { eventType: query.event_type, format: query.format }),
    );
  });

  // ---- models -------------------------------------------------------------------------------------------

  app.post('/api/models', async (c) => {
    const registered = parseRequest(modelsBodySchema, await readJsonBody(c));
    await models.register(registered);
    return c.json(registered, 201);
  });
  app.get('/api/models', (c) => c.json(models.list()));
  app.delete('/api/models', (c) => {
    models.clear();
    return c.json({ status: 'ok' });
  });

  return app;
}
