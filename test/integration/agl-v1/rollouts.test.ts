// v1 rollouts, events and the terminal cursor (docs/agl-v1.md, docs/failure-classes.md (39, 41, 66, 67)) over a real socket:
// a v1-style trainer creates rollouts, agents post events, the trainer follows the terminal cursor while
// rollouts are deleted concurrently.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFinalReward } from '../../../src/adapters/reward.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});

afterAll(async () => {
  await gw?.close();
});

interface Reply {
  status: number;
  body: unknown;
}

async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<Reply> {
  const response = await fetch(gw.url + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json' },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

interface V1Rollout {
  rollout_id: string;
  is_train: boolean;
  metadata: Record<string, unknown>;
  status: { state: string; version: number; last_attempt_id: string | null; updated_at: string };
  failure_reason: string | null;
}

async function patch(rid: string, status: Record<string, unknown>): Promise<Reply> {
  return api(`/api/rollouts/${rid}`, { method: 'PATCH', body: { status } });
}

describe('v1 rollouts', () => {
  it('creates idempotently (201), keeps v1 fields, and returns an existing rollout unchanged with its events', async () => {
    const first = await api('/api/rollouts', {
      body: [
        { rollout_id: 'c-1', input: { data_id: 'd1' }, metadata: { batch_idx: 0 } },
        { input: { instance_id: 'i2' }, is_train: false },
      ],
    });
    expect(first.status).toBe(201);
    const [a, b] = first.body as V1Rollout[];
    expect(a).toMatchObject({ rollout_id: 'c-1', is_train: true, metadata: { batch_idx: 0 } });
    expect(a?.status).toMatchObject({ state: 'queuing', version: 1, last_attempt_id: null });
    expect(b?.is_train).toBe(false);
    expect(b?.rollout_id).toMatch(/\S+/);
    await api('/api/rollouts/c-1/attempt/0/events', { body: { event_type: 'note', data: { text: 'hi' } } });
    const again = await api('/api/rollouts', { body: [{ rollout_id: 'c-1', input: 'other', is_train: false }] });
    expect(again.status).toBe(201);
    expect((again.body as V1Rollout[])[0]).toMatchObject({ rollout_id: 'c-1', is_train: true });
    const events = await api('/api/rollouts/c-1/events');
    expect(events.body).toMatchObject([{ event_type: 'note', data: { text: 'hi' } }]);
    const got = await api('/api/rollouts/c-1');
    expect(got.body).toMatchObject({ rollout: { rollout_id: 'c-1' }, attempts: ['0'] });
    expect((await api('/api/rollouts/missing')).status).toBe(404);
  });

  it('PATCH follows the v1 transition table: 409 with v1 wording, 422 for unknown states or fields', async () => {
    await api('/api/rollouts', { body: [{ rollout_id: 'p-1', input: 1 }] });
    const skip = await patch('p-1', { state: 'succeeded' });
    expect(skip.status).toBe(409);
    expect(skip.body).toMatchObject({ detail: 'Rollout p-1: cannot transition queuing -> succeeded' });
    expect((await patch('p-1', { state: 'cancelled' })).status).toBe(422);
    expect((await api('/api/rollouts/p-1', { method: 'PATCH', body: { nope: 1 } })).status).toBe(422);
    expect((await api('/api/rollouts/p-1', { method: 'PATCH', body: { status: { bogus: 1 } } })).status).toBe(422);
    const noop = await api('/api/rollouts/p-1', { method: 'PATCH', body: {} });
    expect((noop.body as V1Rollout).status.version).toBe(1);

    const running = await patch('p-1', { state: 'running', k8s_job_name: 'job-1' });
    expect(running.status).toBe(200);
    expect((running.body as V1Rollout).status).toMatchObject({ state: 'running', version: 2, k8s_job_name: 'job-1' });
    expect((await patch('p-1', { state: 'running' })).status).toBe(409);
    const note = await patch('p-1', { error_message: 'warming up' });
    expect((note.body as V1Rollout).status).toMatchObject({ state: 'running', version: 3 });
    const done = await patch('p-1', { state: 'succeeded' });
    expect((done.body as V1Rollout).status).toMatchObject({ state: 'succeeded', version: 4 });
    expect((await gw.gateway.store.getRolloutById('p-1'))?.status).toBe('succeeded');
    const back = await patch('p-1', { state: 'failed' });
    expect(back.status).toBe(409);
    expect(back.body).toMatchObject({ detail: 'Rollout p-1: cannot transition succeeded -> failed' });
    expect((await patch('missing', { state: 'running' })).status).toBe(404);
  });

  it('concurrent terminal PATCHes: exactly one succeeds and the completion log holds the rollout once', async () => {
    for (let i = 0; i < 5; i++) {
      const rid = `race-${i}`;
      await api('/api/rollouts', { body: [{ rollout_id: rid, input: i }] });
      await patch(rid, { state: 'running' });
      const results = await Promise.all([
        patch(rid, { state: 'succeeded' }),
        patch(rid, { state: 'failed' }),
        patch(rid, { state: 'succeeded' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    }
    const log = await gw.gateway.store.queryCompletions({ limit: 10_000 });
    for (let i = 0; i < 5; i++) expect(log.items.filter((e) => e.rollout_id === `race-${i}`)).toHaveLength(1);
  });

  it('GET /api/rollouts needs state_in (422), refuses limit < 1 (400), filters by v1 state in insertion order', async () => {
    expect((await api('/api/rollouts')).status).toBe(422);
    expect((await api('/api/rollouts?state_in=queuing&limit=0')).status).toBe(400);
    expect((await api('/api/rollouts?state_in=cancelled')).status).toBe(422);
    await api('/api/rollouts', { body: [0, 1, 2].map((i) => ({ rollout_id: `l-${i}`, input: i })) });
    await patch('l-1', { state: 'running' });
    const queued = (await api('/api/rollouts?state_in=queuing')).body as V1Rollout[];
    const ids = queued.map((r) => r.rollout_id).filter((id) => id.startsWith('l-'));
    expect(ids).toEqual(['l-0', 'l-2']);
    const both = (await api('/api/rollouts?state_in=queuing&state_in=running&limit=500')).body as V1Rollout[];
    expect(both.filter((r) => r.rollout_id.startsWith('l-')).map((r) => r.rollout_id)).toEqual(['l-0', 'l-1', 'l-2']);
    const one = (await api('/api/rollouts?state_in=queuing&limit=1')).body as V1Rollout[];
    expect(one).toHaveLength(1);
  });

  it('a reward event is a v0.3 reward span after the calls it judges; DELETE is 204 and idempotent', async () => {
    await api('/api/rollouts', { body: [{ rollout_id: 'r-1', input: 1 }] });
    const posted = await api('/api/rollouts/r-1/attempt/0/events', {
      body: { event_type: 'reward', data: { value: 0.75, source: 'judge', reason: 'ok', extra: 1 } },
    });
    expect(posted.status).toBe(200);
    expect(posted.body).toMatchObject({
      event_type: 'reward',
      rollout_id: 'r-1',
      attempt_id: '0',
      data: { value: 0.75 },
    });
    const spans = await gw.gateway.store.querySpans('r-1');
    expect(spans.items[0]?.name).toBe('agentlightning.annotation');
    expect(findFinalReward(spans.items)).toBe(0.75);
    const triplet = await api('/api/rollouts/r-1/events?format=triplet');
    expect(triplet.body).toMatchObject([
      { event_type: 'reward', data: { value: 0.75, source: 'judge', reason: 'ok' } },
    ]);
    expect(((triplet.body as Array<{ data: object }>)[0]?.data ?? {}) as object).not.toHaveProperty('extra');
    expect((await api('/api/rollouts/r-1/events?event_type=model_request')).body).toEqual([]);
    expect((await api('/api/rollouts/r-1/events?format=csv')).status).toBe(422);
    expect((await api('/api/rollouts/nope/attempt/0/events', { body: { event_type: 'x' } })).status).toBe(404);

    expect((await api('/api/rollouts/r-1', { method: 'DELETE' })).status).toBe(204);
    expect((await api('/api/rollouts/r-1', { method: 'DELETE' })).status).toBe(204);
    expect((await api('/api/rollouts/r-1')).status).toBe(404);
    expect((await gw.gateway.store.querySpans('r-1')).total).toBe(0);
  });
});

describe('v1 attempts', () => {
  it('a burst of first events starts the attempt once; a finished rollout records on known attempts only', async () => {
    await api('/api/rollouts', { body: [{ rollout_id: 'a-1', input: 1 }] });
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api('/api/rollouts/a-1/attempt/0/events', { body: { event_type: 'step', data: { i } } }),
      ),
    );
    expect(burst.every((r) => r.status === 200)).toBe(true);
    expect((await gw.gateway.store.queryAttempts('a-1')).items.map((a) => a.attempt_id)).toEqual(['0']);
    expect(((await api('/api/rollouts/a-1/events')).body as unknown[]).length).toBe(8);
    // The agent's events do not move the v1 state; the trainer does.
    expect(((await api('/api/rollouts/a-1')).body as { rollout: V1Rollout }).rollout.status.state).toBe('queuing');
    await patch('a-1', { state: 'running' });
    await patch('a-1', { state: 'failed', error_message: 'boom' });
    const late = await api('/api/rollouts/a-1/attempt/0/events', {
      body: { event_type: 'reward', data: { value: 0 } },
    });
    expect(late.status).toBe(200);
    const unknown = await api('/api/rollouts/a-1/attempt/9/events', { body: { event_type: 'x' } });
    expect(unknown.status).toBe(409);
    expect((await gw.gateway.store.getRolloutById('a-1'))?.status).toBe('failed');
    // A v1 trainer's failure states no reason; the v1 view carries the store's.
    expect(((await api('/api/rollouts/a-1')).body as { rollout: V1Rollout }).rollout.failure_reason).toBe('unknown');
    const log = await gw.gateway.store.queryCompletions({ limit: 100_000 });
    expect(log.items.filter((e) => e.rollout_id === 'a-1')).toHaveLength(1);
  });
});

describe('v1 trainer flow over the terminal cursor', () => {
  it('sees every live completion exactly once with concurrent deletes, in far fewer requests than rollouts', async () => {
    const start = (await api('/api/rollouts/terminal?after=0&limit=100000')).body as { next_after: number };
    let cursor = start.next_after;
    const n = 60;
    const ids = Array.from({ length: n }, (_, i) => `t-${i}`);
    const created = await api('/api/rollouts', {
      body: ids.map((id, i) => ({ rollout_id: id, input: { data_id: `d${i}` } })),
    });
    expect(created.status).toBe(201);

    const seen: string[] = [];
    let requests = 0;
    // One trainer: its polls run one after another, never two on the same cursor.
    let following: Promise<void> = Promise.resolve();
    const follow = (): Promise<void> => {
      following = following.then(pollToEnd);
      return following;
    };
    const pollToEnd = async (): Promise<void> => {
      for (;;) {
        const page = (await api(`/api/rollouts/terminal?after=${cursor}&limit=16`)).body as {
          items: Array<{ rollout_id: string; state: string; data_id: string; is_train: boolean }>;
          next_after: number;
        };
        requests++;
        for (const item of page.items) {
          expect(item.data_id).toBe(`d${item.rollout_id.slice(2)}`);
          seen.push(item.rollout_id);
        }
        expect(page.next_after).toBeGreaterThanOrEqual(cursor);
        if (page.next_after === cursor) return;
        cursor = page.next_after;
      }
    };

    // Agents: start, report a reward, finish; the trainer deletes every fifth rollout once it is done.
    const deleted = new Set<string>();
    await Promise.all(
      ids.map(async (id, i) => {
        await patch(id, { state: 'running' });
        await api(`/api/rollouts/${id}/attempt/0/events`, { body: { event_type: 'reward', data: { value: i } } });
        const done = await patch(id, { state: i % 7 === 0 ? 'failed' : 'succeeded' });
        expect(done.status).toBe(200);
        if (i % 5 === 0) {
          deleted.add(id);
          await api(`/api/rollouts/${id}`, { method: 'DELETE' });
        }
        if (i % 30 === 0) await follow();
      }),
    );
    await follow();
    // Deleted rollouts may or may not have been seen (a delete can race the follower); nothing else is lost.
    expect(new Set(seen).size).toBe(seen.length);
    const live = ids.filter((id) => !deleted.has(id));
    for (const id of live) expect(seen).toContain(id);
    for (const id of seen) expect(ids).toContain(id);
    // Far fewer than one request per rollout (v1 trainers poll each pending rollout).
    expect(requests).toBeLessThan(n);
    const tail = (await api(`/api/rollouts/terminal?after=${cursor}`)).body as {
      items: unknown[];
      total_terminal: number;
    };
    expect(tail.items).toEqual([]);
    // Clamping like v1: a negative cursor reads from the start, a limit below 1 returns one item.
    const clamped = (await api('/api/rollouts/terminal?after=-5&limit=0')).body as { items: unknown[] };
    expect(clamped.items.length).toBeLessThanOrEqual(1);
  });
});
