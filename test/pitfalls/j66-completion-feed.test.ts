// docs/failure-classes.md#66: a trainer follows GET /v1/agl/completions instead of polling each rollout. 1 000 rollouts
// finish while the consumer pages through the feed and a cleaner deletes rollouts it has already seen and some
// it has not; the consumer sees every completion exactly once, in seq order, with O(pages) requests.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ROLLOUTS = 1_000;
const PAGE = 100;
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

interface Entry {
  seq: number;
  rollout_id: string;
  deleted: boolean;
}

it(`delivers ${ROLLOUTS} completions once each, in order, in O(pages) requests under concurrent deletes`, {
  timeout: 60_000,
}, async () => {
  const store = gw.gateway.store;
  const rollouts = await store.enqueueManyRollouts(Array.from({ length: ROLLOUTS }, (_, i) => ({ input: i })));
  const finishing = (async () => {
    for (const [i, rollout] of rollouts.entries()) {
      await store.updateRollout(rollout.rollout_id, { status: i % 3 === 0 ? 'failed' : 'succeeded' });
      // Every 7th rollout is deleted right after it finished, often before the consumer reads it.
      if (i % 7 === 0) await store.deleteRollout(rollout.rollout_id);
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1));
    }
  })();

  const seen: Entry[] = [];
  let after = 0;
  let requests = 0;
  let finished = false;
  void finishing.then(() => {
    finished = true;
  });
  for (;;) {
    const done = finished;
    const response = await fetch(`${gw.url}/v1/agl/completions?after=${after}&limit=${PAGE}`);
    requests++;
    expect(response.status).toBe(200);
    const page = (await response.json()) as { items: Entry[]; next_after: number };
    seen.push(...page.items);
    // A consumer deletes what it has processed, racing the producer's deletes.
    for (const entry of page.items.filter((e) => !e.deleted).slice(0, 5)) await store.deleteRollout(entry.rollout_id);
    after = page.next_after;
    if (page.items.length === 0) {
      if (done) break;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  await finishing;

  const seqs = seen.map((e) => e.seq);
  expect(seqs).toEqual(seqs.toSorted((a, b) => a - b));
  expect(new Set(seqs).size).toBe(seqs.length);
  // Every rollout's completion was delivered once: live, or as a tombstone when deleted before it was read.
  expect(seen.map((e) => e.rollout_id).toSorted()).toEqual(rollouts.map((r) => r.rollout_id).toSorted());
  // Read again from the start once everything finished: whole pages, tombstones included, same entries.
  const replay: Entry[] = [];
  let cursor = 0;
  let replayRequests = 0;
  for (;;) {
    const page = (await (await fetch(`${gw.url}/v1/agl/completions?after=${cursor}&limit=${PAGE}`)).json()) as {
      items: Entry[];
      next_after: number;
    };
    replayRequests++;
    if (page.items.length === 0) break;
    replay.push(...page.items);
    cursor = page.next_after;
  }
  console.info(`J.66: ${seen.length} completions in ${requests} requests while live, ${replayRequests} on replay`);
  expect(replayRequests).toBe(Math.ceil(ROLLOUTS / PAGE) + 1);
  expect(replay.map((e) => e.seq)).toEqual(seqs);
});
