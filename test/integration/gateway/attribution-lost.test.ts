// docs/failure-classes.md (25 and 29): every path (chat and completions, stream and non-stream, success, upstream
// error, agent abort; path or header attribution) stores a span with the rollout, the attempt and the
// sequence id allocated on arrival, and the span is readable over the store API the moment the agent
// has its answer.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function spansOverRest(
  rid: string,
): Promise<Array<{ sequence_id: number; attributes: Record<string, unknown> }>> {
  const response = await fetch(`${h.gw.url}/v1/agl/spans?rollout_id=${encodeURIComponent(rid)}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: Array<{ sequence_id: number; attributes: Record<string, unknown> }> })
    .items;
}

it('stores a span for every endpoint, mode and outcome, readable when the answer arrives', async () => {
  const rid = rolloutId();
  const client = h.client(rid, 'attempt-7');
  let expected = 0;
  const check = async (label: string, status: string) => {
    expected++;
    const spans = await spansOverRest(rid);
    expect(spans.length, label).toBe(expected);
    const span = spans[expected - 1];
    expect(span?.sequence_id, label).toBe(expected);
    expect(span?.attributes[A.ATTR_ROLLOUT_ID], label).toBe(rid);
    expect(span?.attributes[A.ATTR_ATTEMPT_ID], label).toBe('attempt-7');
    expect(span?.attributes[A.ATTR_SPAN_SEQUENCE_ID], label).toBe(expected);
    expect(span?.attributes[A.ATTR_STREAM_STATUS], label).toBe(status);
  };
  const messages = [{ role: 'user' as const, content: 'hi' }];
  await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 3 });
  await check('chat', 'ok');
  for await (const _ of await client.chat.completions.create({
    model: 'mock-model',
    messages,
    max_tokens: 3,
    stream: true,
  }))
    void _;
  await check('chat stream', 'ok');
  await client.completions.create({ model: 'mock-model', prompt: 'a', max_tokens: 3 });
  await check('completions', 'ok');
  for await (const _ of await client.completions.create({
    model: 'mock-model',
    prompt: 'a',
    max_tokens: 3,
    stream: true,
  }))
    void _;
  await check('completions stream', 'ok');
  await client.chat.completions
    .create({ model: 'mock-model', messages, mock_fault: 'status=500' } as never)
    .catch(() => undefined);
  await check('upstream error', 'error');
  await client.chat.completions
    .create({ model: 'mock-model', messages, stream: true, mock_fault: 'error-event-after=1' } as never)
    .then(async (s) => {
      for await (const _ of s as unknown as AsyncIterable<unknown>) void _;
    })
    .catch(() => undefined);
  await check('stream error', 'stream_error');
});

it('attributes un-prefixed calls from x-rollout-id / x-attempt-id headers, and leaves others unattributed', async () => {
  const rid = rolloutId();
  const response = await fetch(`${h.gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-rollout-id': rid, 'x-attempt-id': 'hdr' },
    body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  expect(response.status).toBe(200);
  const spans = await spansOverRest(rid);
  expect(spans.map((s) => [s.sequence_id, s.attributes[A.ATTR_ATTEMPT_ID]])).toEqual([[1, 'hdr']]);
  const rollout = await h.gw.gateway.store.getRolloutById(rid);
  expect(rollout?.rollout_id).toBe(rid);
});

it('refuses unknown rollouts with 404 rollout_not_found when autoCreate is off', async () => {
  const strict = await startHarness({}, { rollouts: { autoCreate: false } });
  try {
    const response = await fetch(`${strict.gw.url}/rollout/nope/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rollout_not_found');
    const started = await strict.gw.gateway.store.startRollout({ input: null, rollout_id: 'known', attempt_id: 'a1' });
    expect(started.attempt.attempt_id).toBe('a1');
    const ok = await strict.client('known', 'a1').chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    expect(ok.choices).toHaveLength(1);
  } finally {
    await strict.close();
  }
});
