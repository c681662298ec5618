// The rollout router without sockets, on an injected clock: the bound with the new call counted, the hash
// tie-break, and the rollout map's limits (a call longer than the idle limit keeps its rollout).
import { expect, it } from 'vitest';
import { routingSchema } from '../../../config/routing-schema.js';
import { RolloutRouter } from '../../../src/gateway/pools/rollout-router.js';
import { pickSticky } from '../../../src/gateway/pools/sticky-hash.js';

const URLS = ['http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1', 'http://10.0.0.3:8000/v1'];

function backends(loads: readonly number[]) {
  return URLS.map((url, i) => ({ backend: { url }, inflight: loads[i] ?? 0 }));
}

function router(config: Record<string, unknown>, clock: { ms: number }): RolloutRouter {
  return new RolloutRouter({ config: routingSchema.parse(config), now: () => clock.ms });
}

it('places a new rollout on its hash backend when loads tie, and keeps it within maxImbalance only', () => {
  const clock = { ms: 0 };
  const r = router({ maxImbalance: 2 }, clock);
  const rid = 'rollout-a';
  const home = pickSticky(rid, URLS, (u) => u) ?? '';
  const first = r.choose({ candidates: backends([0, 0, 0]), rolloutId: rid });
  expect([first.member?.backend.url, first.decision]).toEqual([home, 'new']);
  r.commit({ rolloutId: rid, url: home });
  const at = URLS.indexOf(home);
  const loads = (homeLoad: number) => URLS.map((_, i) => (i === at ? homeLoad : 1));
  // 2 + 1 - 1 = 2 <= 2: stays; 3 + 1 - 1 = 3 > 2: moves to a least-loaded one.
  expect(r.choose({ candidates: backends(loads(2)), rolloutId: rid }).decision).toBe('sticky');
  const moved = r.choose({ candidates: backends(loads(3)), rolloutId: rid });
  expect(moved.decision).toBe('moved');
  expect(moved.member?.backend.url).not.toBe(home);
});

it('forgets idle rollouts but keeps one whose call outlives the idle limit', () => {
  const clock = { ms: 0 };
  const r = router({ rolloutIdleMs: 100, maxRollouts: 10 }, clock);
  const long = r.commit({ rolloutId: 'long', url: URLS[0] ?? '' });
  r.commit({ rolloutId: 'short', url: URLS[1] ?? '' })();
  clock.ms = 500;
  r.commit({ rolloutId: 'other', url: URLS[2] ?? '' })();
  expect(r.tracked).toBe(2);
  expect(r.choose({ candidates: backends([0, 0, 0]), rolloutId: 'short' }).decision).toBe('new');
  expect(r.choose({ candidates: backends([5, 0, 0]), rolloutId: 'long' })).toMatchObject({
    decision: 'moved',
  });
  long();
  expect(r.choose({ candidates: backends([0, 0, 0]), rolloutId: 'long' }).decision).toBe('sticky');
  clock.ms = 1_000;
  expect(r.choose({ candidates: backends([0, 0, 0]), rolloutId: 'long' }).decision).toBe('new');
});

it('never remembers more than maxRollouts', () => {
  const r = router({ maxRollouts: 5 }, { ms: 0 });
  for (let i = 0; i < 50; i += 1) r.commit({ rolloutId: `r${i}`, url: URLS[i % 3] ?? '' })();
  expect(r.tracked).toBe(5);
  expect(r.choose({ candidates: backends([0, 0, 0]), rolloutId: 'r0' }).decision).toBe('new');
  expect(r.choose({ candidates: backends([0, 0, 0]), rolloutId: 'r49' }).decision).toBe('sticky');
});
