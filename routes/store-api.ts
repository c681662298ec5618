// /v1/agl/*: agent-lightning v0.3's store REST API (docs/store.md) over any LightningStore.
// Thin: read and validate the request, call the store, shape the response. Errors are thrown and rendered by
// middleware/openai-errors.ts; StoreError('not_found') becomes a 404 naming the id.
import { type Context, Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import { assertMayWriteRollouts } from '../src/auth/scopes.js';
import { GatewayError } from '../src/errors.js';
import { HEADER_IDEMPOTENCY_KEY } from '../src/gateway/upstream/headers.js';
import { COMPLETIONS_MAX_PAGE, STORE_API_MAX_PAGE } from '../src/store/core/page-limits.js';
import { REQUEST_LIMITS } from '../src/store/core/request-limits.js';
import type {
  EnqueueRolloutRequest,
  LightningStore,
  PageOptions,
  Rollout,
  SpanInput,
  StartRolloutRequest,
} from '../src/store/core/types.js';
import { withKeyedId } from '../src/store-api/idempotency.js';
import { addReward } from '../src/store-api/reward.js';
import { jsonInSlices } from './json-in-slices.js';
import { parseRequest, readJsonBody } from './request-body.js';
import {
  ATTEMPT_UPDATE_KEYS,
  attemptQuerySchema,
  attemptUpdateSchema,
  completionsQuerySchema,
  dequeueBodySchema,
  enqueueBodySchema,
  namedResourcesSchema,
  nextSequenceBodySchema,
  ROLLOUT_UPDATE_NON_NULLABLE,
  resourcesQuerySchema,
  resourcesWriteQuerySchema,
  rewardBodySchema,
  rolloutQuerySchema,
  rolloutUpdateSchema,
  SORT_FIELDS,
  type SortFieldsKey,
  spanBodySchema,
  spanQuerySchema,
  startAttemptBodySchema,
  startRolloutBodySchema,
  waitBodySchema,
  workerQuerySchema,
  workerUpdateSchema,
} from './store-api-schemas.js';

export interface StoreApiDeps {
  readonly store: LightningStore;
  /** Aborted when the gateway starts closing: pending long polls answer with what has finished so far. */
  readonly shutdown?: AbortSignal;
}

const PREFIX = '/v1/agl';
const SAFE_IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
/** Query parameters that repeat (`?status_in=a&status_in=b`); `name[]` spellings are accepted too. */
const ARRAY_QUERY_PARAMS = new Set(['status_in', 'rollout_id_in', 'status', 'rollout_ids']);

export function createStoreApiRoutes(deps: StoreApiDeps): Hono<AppEnv> {
  const { store } = deps;
  const app = new Hono<AppEnv>();
  /** Long polls listen to the caller's connection and to the server's shutdown. */
  const clientOrShutdown = (client: AbortSignal): AbortSignal =>
    deps.shutdown === undefined ? client : AbortSignal.any([client, deps.shutdown]);

  app.get(`${PREFIX}/health`, (c) => c.json({ status: 'ok' }));

  // --- queue ---
  app.post(`${PREFIX}/queues/rollouts/enqueue`, async (c) => {
    const raw = await readJson(c);
    assertAtMost(raw, 'rollouts', REQUEST_LIMITS.enqueueRollouts);
    const body = parseRequest(enqueueBodySchema, raw);
    const key = idempotencyKey(c);
    const requests: EnqueueRolloutRequest[] =
      key === null ? body.rollouts : body.rollouts.map((request, i) => withKeyedId('enqueue', key, request, i));
    return jsonInSlices(c, await store.enqueueManyRollouts(requests), { status: 201 });
  });

  app.post(`${PREFIX}/queues/rollouts/dequeue`, async (c) => {
    const body = parseRequest(dequeueBodySchema, await readJson(c, { optional: true }));
    const limit = body.limit ?? 1;
    if (limit <= 0) return c.json([]);
    const waitMs = body.wait_ms ?? 0;
    if (waitMs === 0) return c.json(await store.dequeueManyRollouts({ limit, worker_id: body.worker_id ?? null }));
    // A long poll ends, claiming nothing, when the caller hangs up or the server shuts down (it then polls again).
    const signal = clientOrShutdown(c.req.raw.signal);
    const claimed = await store.dequeueManyRollouts({
      limit,
      worker_id: body.worker_id ?? null,
      wait_ms: waitMs,
      signal,
    });
    if (c.req.raw.signal.aborted) return c.body(null, 204);
    return c.json(claimed);
  });

  // --- rollouts ---
  app.post(`${PREFIX}/rollouts`, async (c) => {
    const request: StartRolloutRequest = parseRequest(startRolloutBodySchema, await readJson(c));
    const key = idempotencyKey(c);
    return c.json(await store.startRollout(key === null ? request : withKeyedId('start', key, request)), 201);
  });

  const queryRollouts = async (c: Context<AppEnv>, raw: unknown) => {
    for (const field of ['rollout_id_in', 'rollout_ids']) assertAtMost(raw, field, REQUEST_LIMITS.rolloutIdsPerQuery);
    const q = parseRequest(rolloutQuerySchema, raw);
    return pageInSlices(
      c,
      await store.queryRollouts({
        ...page(q, 'rollouts'),
        status_in: q.status_in ?? q.status ?? null,
        rollout_id_in: q.rollout_id_in ?? q.rollout_ids ?? null,
        rollout_id_contains: q.rollout_id_contains ?? null,
        filter_logic: q.filter_logic ?? 'and',
      }),
    );
  };
  app.get(`${PREFIX}/rollouts`, (c) => queryRollouts(c, readQuery(c)));
  app.post(`${PREFIX}/rollouts/search`, async (c) => queryRollouts(c, await readJson(c, { optional: true })));

  app.get(`${PREFIX}/rollouts/:rid`, async (c) => c.json(await store.getRolloutById(c.req.param('rid'))));
  // Idempotent: `deleted` says whether there was anything to delete.
  // The store tells in-process caches of the rollout (the attribution service) itself.
  app.delete(`${PREFIX}/rollouts/:rid`, async (c) =>
    c.json({ deleted: await store.deleteRollout(c.req.param('rid')) }),
  );
  app.get(`${PREFIX}/completions`, async (c) => {
    const q = parseRequest(completionsQuerySchema, readQuery(c));
    if (q.limit != null && q.limit > COMPLETIONS_MAX_PAGE) {
      throw new GatewayError('invalid_request', `limit must be at most ${COMPLETIONS_MAX_PAGE}; follow next_after`, {
        param: 'limit',
      });
    }
    return c.json(await store.queryCompletions(definedOnly({ after: q.after, limit: q.limit })));
  });

  app.post(`${PREFIX}/rollouts/:rid`, async (c) => {
    const raw = await readJson(c);
    rejectNulls(raw, ROLLOUT_UPDATE_NON_NULLABLE);
    return c.json(await store.updateRollout(c.req.param('rid'), parseRequest(rolloutUpdateSchema, raw)));
  });

  // --- attempts ---
  app.post(`${PREFIX}/rollouts/:rid/attempts`, async (c) => {
    const body = parseRequest(startAttemptBodySchema, await readJson(c, { optional: true }));
    return c.json(await store.startAttempt(c.req.param('rid'), { worker_id: body.worker_id ?? null }), 201);
  });

  const queryAttempts = async (c: Context<AppEnv>, raw: unknown) => {
    const q = parseRequest(attemptQuerySchema, raw);
    const defaults = { sort_by: 'sequence_id', ...definedOnly(page(q, 'attempts')) };
    return c.json(await store.queryAttempts(c.req.param('rid') ?? '', defaults));
  };
  app.get(`${PREFIX}/rollouts/:rid/attempts`, (c) => queryAttempts(c, readQuery(c)));
  app.post(`${PREFIX}/rollouts/:rid/attempts/search`, async (c) =>
    queryAttempts(c, await readJson(c, { optional: true })),
  );

  app.get(`${PREFIX}/rollouts/:rid/attempts/latest`, async (c) =>
    c.json(await store.getLatestAttempt(c.req.param('rid'))),
  );

  app.post(`${PREFIX}/rollouts/:rid/attempts/:aid/reward`, async (c) => {
    const body = parseRequest(rewardBodySchema, await readJson(c));
    const reward = { rolloutId: c.req.param('rid'), attemptId: c.req.param('aid'), name: body.name, value: body.value };
    return c.json(await addReward(store, reward), 201);
  });

  app.post(`${PREFIX}/rollouts/:rid/attempts/:aid`, async (c) => {
    const raw = await readJson(c);
    rejectNulls(raw, ATTEMPT_UPDATE_KEYS);
    const update = parseRequest(attemptUpdateSchema, raw);
    return c.json(await store.updateAttempt(c.req.param('rid'), c.req.param('aid'), update));
  });

  // --- workers ---
  const queryWorkers = async (c: Context<AppEnv>, raw: unknown) => {
    const q = parseRequest(workerQuerySchema, raw);
    return c.json(
      await store.queryWorkers({
        ...page(q, 'workers'),
        status_in: q.status_in ?? null,
        worker_id_contains: q.worker_id_contains ?? null,
        filter_logic: q.filter_logic ?? 'and',
      }),
    );
  };
  app.get(`${PREFIX}/workers`, (c) => queryWorkers(c, readQuery(c)));
  app.post(`${PREFIX}/workers/search`, async (c) => queryWorkers(c, await readJson(c, { optional: true })));
  app.get(`${PREFIX}/workers/:wid`, async (c) => c.json(await store.getWorkerById(c.req.param('wid'))));
  app.post(`${PREFIX}/workers/:wid`, async (c) => {
    const raw = await readJson(c, { optional: true });
    rejectNulls(raw, ['heartbeat_stats']);
    return c.json(await store.updateWorker(c.req.param('wid'), parseRequest(workerUpdateSchema, raw)));
  });

  app.get(`${PREFIX}/statistics`, async (c) => c.json(await store.statistics()));

  // --- resources ---
  app.get(`${PREFIX}/resources`, async (c) => {
    const q = parseRequest(resourcesQuerySchema, readQuery(c));
    return c.json(
      await store.queryResources({
        ...page(q, 'resources'),
        resources_id: q.resources_id ?? null,
        resources_id_contains: q.resources_id_contains ?? null,
      }),
    );
  });
  app.post(`${PREFIX}/resources`, async (c) =>
    c.json(
      await store.addResources(parseRequest(namedResourcesSchema, await readJson(c)), resourcesWriteOptions(c)),
      201,
    ),
  );
  app.get(`${PREFIX}/resources/latest`, async (c) => c.json(await store.getLatestResources()));
  app.get(`${PREFIX}/resources/:id`, async (c) => c.json(await store.getResourcesById(c.req.param('id'))));
  app.post(`${PREFIX}/resources/:id`, async (c) =>
    c.json(
      await store.updateResources(
        c.req.param('id'),
        parseRequest(namedResourcesSchema, await readJson(c)),
        resourcesWriteOptions(c),
      ),
    ),
  );

  // --- spans ---
  app.post(`${PREFIX}/spans/search`, async (c) => querySpans(c, await readJson(c, { optional: true })));
  app.get(`${PREFIX}/spans`, (c) => querySpans(c, readQuery(c)));
  app.post(`${PREFIX}/spans/next`, async (c) => {
    const body = parseRequest(nextSequenceBodySchema, await readJson(c));
    assertMayWriteRollouts(c.get('principal'), [{ rolloutId: body.rollout_id, attemptId: body.attempt_id ?? null }]);
    return c.json({ sequence_id: await store.nextSequenceId(body.rollout_id, body.attempt_id ?? null) });
  });
  app.post(`${PREFIX}/spans`, async (c) => {
    const span: SpanInput = parseRequest(spanBodySchema, await readJson(c));
    assertMayWriteRollouts(c.get('principal'), [{ rolloutId: span.rollout_id, attemptId: span.attempt_id }]);
    return c.json(await store.addSpan(span), 201);
  });

  const querySpans = async (c: Context<AppEnv>, raw: unknown) => {
    const q = parseRequest(spanQuerySchema, raw);
    const { rollout_id, limit, offset, sort_by, sort_order, ...filters } = q;
    const paging = definedOnly(page({ limit, offset, sort_by, sort_order }, 'spans'));
    return pageInSlices(
      c,
      await store.querySpans(rollout_id, { sort_by: 'sequence_id', ...paging, ...definedOnly(filters) }),
    );
  };

  // --- waits: a server-side long poll, cancelled when the client goes away ---
  app.post(`${PREFIX}/waits/rollouts`, async (c) => {
    const raw = await readJson(c);
    assertAtMost(raw, 'rollout_ids', REQUEST_LIMITS.waitRolloutIds);
    const body = parseRequest(waitBodySchema, raw);
    const client = c.req.raw.signal;
    const signal = clientOrShutdown(client);
    let finished: Rollout[];
    try {
      finished = await store.waitForRollouts(body.rollout_ids, { timeout: body.timeout ?? null, signal });
    } catch (error) {
      // The caller hung up: nobody reads this answer, and it is not a server fault worth an error log.
      if (client.aborted) return c.body(null, 204);
      // Shutting down: answer like an expired timeout so the caller simply polls again (after the restart).
      if (deps.shutdown?.aborted) finished = await store.waitForRollouts(body.rollout_ids, { timeout: 0 });
      else throw error;
    }
    return jsonInSlices(c, finished);
  });

  // OTLP signals other than traces are not stored (docs/store.md).
  for (const path of ['/v1/metrics', '/v1/logs', '/v1/development/profiles']) {
    app.post(path, () => {
      throw new GatewayError('not_implemented', `${path} is not supported; only /v1/traces is ingested`);
    });
  }

  return app;
}

/** v0.3 bodies are required unless the route says so; an empty optional body is `{}`. */
function readJson(c: Context<AppEnv>, options?: { optional?: boolean }): Promise<unknown> {
  return readJsonBody(c, { required: options?.optional !== true });
}

function resourcesWriteOptions(c: Context<AppEnv>): { latest: boolean } {
  return { latest: parseRequest(resourcesWriteQuerySchema, readQuery(c)).latest !== 'false' };
}

function readQuery(c: Context<AppEnv>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [rawName, values] of Object.entries(c.req.queries())) {
    const name = rawName.endsWith('[]') ? rawName.slice(0, -2) : rawName;
    if (ARRAY_QUERY_PARAMS.has(name)) {
      const previous = out[name];
      out[name] = [...(Array.isArray(previous) ? previous : []), ...values];
    } else {
      const last = values.at(-1);
      if (last !== undefined) out[name] = last;
    }
  }
  return out;
}

/** A page of many items, written in slices (routes/json-in-slices.ts). */
function pageInSlices(c: Context<AppEnv>, result: { readonly items: readonly unknown[] }): Response {
  const { items, ...rest } = result;
  return jsonInSlices(c, items, { rest });
}

/** More items in one request than its family allows (docs/input-limits.md): refused before any is looked at. */
function assertAtMost(raw: unknown, field: string, limit: number): void {
  const items = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[field] : undefined;
  if (!Array.isArray(items) || items.length <= limit) return;
  throw new GatewayError(
    'request_too_large',
    `${field} has ${items.length} items; one request may carry at most ${limit}: send them in several requests`,
    { param: field },
  );
}

/** Explicit null on a key that can only be omitted is a 400 (docs/failure-classes.md#37), distinct from schema errors. */
function rejectNulls(raw: unknown, keys: readonly string[]): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return;
  for (const key of keys) {
    if (key in raw && (raw as Record<string, unknown>)[key] === null) {
      throw new GatewayError('invalid_request', `${key} cannot be null; omit it to leave it unchanged`, {
        param: key,
      });
    }
  }
}

function page(
  q: { limit?: number | null; offset?: number | null; sort_by?: string | null; sort_order?: 'asc' | 'desc' | null },
  model: SortFieldsKey,
): PageOptions {
  const max = STORE_API_MAX_PAGE[model];
  const asked = q.limit ?? -1;
  const offset = q.offset ?? 0;
  if (asked === 0 || asked < -1) {
    throw new GatewayError('invalid_request', 'limit must be -1 (no limit) or a positive integer', { param: 'limit' });
  }
  // -1 is what every v0.3 client sends without choosing: it gets the largest page, and the answer's `limit` and
  // `total` tell it there is more. A larger explicit limit is a client's choice, refused like other bad paging.
  if (asked > max) {
    throw new GatewayError('invalid_request', `limit must be at most ${max} for ${model}; follow offset for more`, {
      param: 'limit',
    });
  }
  const limit = asked === -1 ? max : asked;
  if (offset < 0) throw new GatewayError('invalid_request', 'offset must be >= 0', { param: 'offset' });
  const allowed: readonly string[] = SORT_FIELDS[model];
  if (q.sort_by != null && !allowed.includes(q.sort_by)) {
    throw new GatewayError(
      'invalid_request',
      `Invalid sort_by: ${q.sort_by}, allowed fields are: ${allowed.join(', ')}`,
      {
        param: 'sort_by',
      },
    );
  }
  return { limit, offset, sort_by: q.sort_by ?? null, sort_order: q.sort_order ?? 'asc' };
}

/** Drops null/undefined so store defaults apply. */
function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], null> } {
  const out: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(value)) if (entry !== null && entry !== undefined) out[key] = entry;
  return out as { [K in keyof T]?: Exclude<T[K], null> };
}

function idempotencyKey(c: Context<AppEnv>): string | null {
  const key = c.req.header(HEADER_IDEMPOTENCY_KEY);
  if (key === undefined) return null;
  if (!SAFE_IDEMPOTENCY_KEY.test(key)) {
    throw new GatewayError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters', {
      param: HEADER_IDEMPOTENCY_KEY,
    });
  }
  return key;
}
