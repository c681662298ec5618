// The fuzz suite's mutators: a seed replays exactly (the suite's failure messages rely on it), frozen keys stay
// as they were (a long poll's timeout must never turn into a legal long wait), and deep nesting really is deep.
import { expect, it } from 'vitest';
import { createRng } from '../../src/algorithms/rng.js';
import { mutate, type SeedRequest } from './mutate.js';

const seed: SeedRequest = {
  name: 'wait',
  method: 'POST',
  path: '/v1/agl/waits/rollouts',
  json: { rollout_ids: ['ro-1', 'ro-2'], timeout: 0.01, nested: { a: [1, { b: 'c' }] } },
  frozenKeys: ['timeout'],
};

function run(seedValue: number, count: number) {
  const rng = createRng(seedValue);
  return Array.from({ length: count }, () => mutate(seed, { rng }));
}

it('produces the same requests for the same seed, different ones for another', () => {
  const text = (requests: ReturnType<typeof run>) =>
    requests.map((r) => `${r.method} ${r.path} ${r.label.join(',')} ${Buffer.from(r.body ?? []).toString('base64')}`);
  expect(text(run(42, 100))).toEqual(text(run(42, 100)));
  expect(text(run(43, 100))).not.toEqual(text(run(42, 100)));
});

it('never changes or drops a frozen key of a body that still parses as the request', () => {
  let parsed = 0;
  for (const request of run(7, 800)) {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(request.body ?? []).toString('utf8'));
    } catch {
      continue;
    }
    // Only requests that still go to the route as JSON could wait; the others are refused before.
    if (request.path !== seed.path || request.method !== 'POST') continue;
    // A body without the ids is refused before any wait; one with them must still carry its timeout.
    if (typeof body !== 'object' || body === null || !('rollout_ids' in body)) continue;
    parsed += 1;
    expect((body as { timeout?: unknown }).timeout, request.label.join(' ')).toBe(0.01);
  }
  expect(parsed).toBeGreaterThan(100);
});

it('writes nesting deeper than any recursive walk would build', () => {
  const deepest = run(11, 400)
    .filter((r) => r.label.some((l) => l.includes('x100000')))
    .map((r) => Buffer.from(r.body ?? []).toString('utf8'));
  expect(deepest.length).toBeGreaterThan(0);
  const sample = deepest[0] as string;
  let depth = 0;
  let max = 0;
  for (const ch of sample) {
    if (ch === '[' || ch === '{') max = Math.max(max, ++depth);
    else if (ch === ']' || ch === '}') depth -= 1;
  }
  expect(max).toBeGreaterThanOrEqual(100_000);
});
