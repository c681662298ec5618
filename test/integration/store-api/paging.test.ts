// List routes at more rollouts than one page holds (issue 14): every list answers at most its page size, a limit
// above it is a 400 in the API's error shape, and following the cursor (offset, x-next-offset, next_after) reaches
// every row exactly once. HttpStore, which implements the in-process `limit: -1` contract, follows the pages itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpStore } from '../../../src/store/client/http.js';
import {
  COMPLETIONS_MAX_PAGE,
  STORE_API_MAX_PAGE,
  V1_LIST_DEFAULT_PAGE,
  V1_LIST_MAX_PAGE,
} from '../../../src/store/core/page-limits.js';
import type { EnqueueRolloutRequest } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { numberedSpan } from '../../helpers/numbered-span.js';

/** More than two of the largest pages, so the last page is partial. */
const N = 2 * STORE_API_MAX_PAGE.rollouts + 345;
const FINISHED = 1_200;

let gw: TestGateway;
/** Every rollout in insertion order: N queued (the first FINISHED then succeeded), and the one holding spans. */
let ids: string[];
let spanRid: string;
let spanAid: string;

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

async function get(path: string): Promise<Reply> {
  const response = await fetch(gw.url + path);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

function expectLimitRefused(reply: Reply): void {
  expect(reply.status).toBe(400);
  expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', param: 'limit' });
  expect(reply.headers.get('x-request-id')).toBeTruthy();
}

beforeAll(async () => {
  gw = await startTestGateway();
  const store = gw.gateway.store;
  const requests: EnqueueRolloutRequest[] = Array.from({ length: N }, (_, i) => ({ input: { data_id: `d${i}` } }));
  ids = (await store.enqueueManyRollouts(requests)).map((r) => r.rollout_id);
  for (const rid of ids.slice(0, FINISHED)) await store.updateRollout(rid, { status: 'succeeded' });
  const started = await store.startRollout({ input: { data_id: 'spans' } });
  spanRid = started.rollout_id;
  spanAid = started.attempt.attempt_id;
  ids.push(spanRid);
});
afterAll(async () => {
  await gw.close();
});

describe('v0.3 store API pages', () => {
  it('serves limit -1 or no limit as the largest page, with limit and total to follow', async () => {
    for (const query of ['', '?limit=-1']) {
      const reply = await get(`/v1/agl/rollouts${query}`);
      expect(reply.status).toBe(200);
      expect(reply.body.items).toHaveLength(STORE_API_MAX_PAGE.rollouts);
      expect(reply.body).toMatchObject({ limit: STORE_API_MAX_PAGE.rollouts, offset: 0, total: ids.length });
    }
  });

  it('following offset reaches every rollout once, in insertion order', async () => {
    const seen: string[] = [];
    for (let offset = 0; ; ) {
      const reply = await get(`/v1/agl/rollouts?offset=${offset}`);
      const items = reply.body.items as Array<{ rollout_id: string }>;
      seen.push(...items.map((r) => r.rollout_id));
      offset += items.length;
      if (items.length === 0 || offset >= reply.body.total) break;
    }
    expect(seen).toEqual(ids);
  });

  it('refuses a limit above the page size on every list route with a 400 naming limit', async () => {
    const rid = ids[0];
    expectLimitRefused(await get(`/v1/agl/rollouts?limit=${STORE_API_MAX_PAGE.rollouts + 1}`));
    expectLimitRefused(await get(`/v1/agl/rollouts/${rid}/attempts?limit=${STORE_API_MAX_PAGE.attempts + 1}`));
    expectLimitRefused(await get(`/v1/agl/spans?rollout_id=${rid}&limit=${STORE_API_MAX_PAGE.spans + 1}`));
    expectLimitRefused(await get(`/v1/agl/workers?limit=${STORE_API_MAX_PAGE.workers + 1}`));
    expectLimitRefused(await get(`/v1/agl/resources?limit=${STORE_API_MAX_PAGE.resources + 1}`));
    expectLimitRefused(await get(`/v1/agl/completions?limit=${COMPLETIONS_MAX_PAGE + 1}`));
    const search = await fetch(`${gw.url}/v1/agl/rollouts/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ limit: STORE_API_MAX_PAGE.rollouts + 1 }),
    });
    expectLimitRefused({ status: search.status, headers: search.headers, body: await search.json() });
  });

  it('pages spans of one rollout at the span page size', async () => {
    const rid = spanRid;
    const count = STORE_API_MAX_PAGE.spans + 7;
    for (let n = 1; n <= count; n++) {
      const span = numberedSpan({ rid, aid: spanAid, n, name: 'step', attributes: {} });
      const posted = await fetch(`${gw.url}/v1/agl/spans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(span),
      });
      expect(posted.status).toBe(201);
    }
    const first = await get(`/v1/agl/spans?rollout_id=${rid}`);
    expect(first.body).toMatchObject({ limit: STORE_API_MAX_PAGE.spans, total: count });
    expect(first.body.items).toHaveLength(STORE_API_MAX_PAGE.spans);
    // The in-process contract is kept over HTTP: limit -1 means every span.
    const client = new HttpStore({ baseUrl: gw.url });
    const all = await client.querySpans(rid);
    expect(new Set(all.items.map((s) => s.span_id)).size).toBe(count);
    expect(all).toMatchObject({ limit: -1, total: count });
    expect(all.items).toHaveLength(count);
  });

  it('HttpStore follows the pages for limit -1 and for a limit above the page size', async () => {
    const client = new HttpStore({ baseUrl: gw.url });
    const all = await client.queryRollouts();
    expect(all.items.map((r) => r.rollout_id)).toEqual(ids);
    expect(all).toMatchObject({ limit: -1, offset: 0, total: ids.length });
    const big = await client.queryRollouts({ limit: STORE_API_MAX_PAGE.rollouts + 10, offset: 5 });
    expect(big.items.map((r) => r.rollout_id)).toEqual(ids.slice(5, 5 + STORE_API_MAX_PAGE.rollouts + 10));
  });
});

describe('v1 pages', () => {
  it('GET /api/rollouts answers the default page and an x-next-offset cursor that reaches every match once', async () => {
    const first = await get('/api/rollouts?state_in=queuing');
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(V1_LIST_DEFAULT_PAGE);
    const seen: string[] = [];
    let path: string | null = `/api/rollouts?state_in=queuing&limit=${V1_LIST_MAX_PAGE}`;
    while (path !== null) {
      const reply = await get(path);
      expect(reply.body.length).toBeLessThanOrEqual(V1_LIST_MAX_PAGE);
      seen.push(...(reply.body as Array<{ rollout_id: string }>).map((r) => r.rollout_id));
      const next = reply.headers.get('x-next-offset');
      path = next === null ? null : `/api/rollouts?state_in=queuing&limit=${V1_LIST_MAX_PAGE}&offset=${next}`;
    }
    expect(seen).toEqual(ids.slice(FINISHED, N));
  });

  it('GET /api/rollouts refuses a limit above the page size with a 400 that v1 clients can read', async () => {
    const reply = await get(`/api/rollouts?state_in=succeeded&limit=${V1_LIST_MAX_PAGE + 1}`);
    expectLimitRefused(reply);
    expect(typeof reply.body.detail).toBe('string');
  });

  it('GET /api/rollouts/terminal clamps its limit to the page size, as v1 clamps', async () => {
    const reply = await get('/api/rollouts/terminal?after=0&limit=100000');
    expect(reply.status).toBe(200);
    expect(reply.body.items).toHaveLength(COMPLETIONS_MAX_PAGE);
    expect(reply.body.total_terminal).toBe(FINISHED);
    const rest = await get(`/api/rollouts/terminal?after=${reply.body.next_after}&limit=100000`);
    expect(rest.body.items).toHaveLength(FINISHED - COMPLETIONS_MAX_PAGE);
  });
});
