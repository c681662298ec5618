// An engine abort (vLLM `/pause`, `/sleep`, `/abort_requests`, a cancel) reaches the agent as a normal answer:
// finish reason "abort" then `[DONE]`, or a normal 200 body with the tokens generated so far. Against the vLLM
// twin, aborted mid-generation by its own dev routes: the gateway passes the answer on as it came, marks the call
// aborted on its span, counts it in /metrics, and no reader turns it (or the rollout that continued from it) into
// a training sample. (SGLang's `{type: "abort"}` finish reason and the Responses API's `cancelled` status are read
// by the same capture: test/unit/gateway/token-id-format-drift.test.ts.)
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

const MODEL = 'mock-model';
let h: Harness;

beforeAll(async () => {
  // Slow enough to act mid-generation: 4 ms per token, a long answer, non-stream answers paced like streams.
  h = await startHarness({
    interTokenMs: 4,
    paceNonStream: true,
    respond: () => `${'a long answer that takes a while '.repeat(4)}done`,
  });
});

afterAll(async () => {
  await h?.close();
});

async function post(path: string, body: unknown = {}): Promise<void> {
  const res = await fetch(`${h.mock.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

/**
 * One chat call of `rid`; with `abort`, the twin aborts it once a few tokens exist: a stream by `/pause?mode=abort`
 * (then `/resume`), a non-stream call by `/abort_requests` naming it. Returns the finish reason the agent saw.
 */
async function chat(rid: string, options: { stream: boolean; abort: boolean }): Promise<unknown> {
  const body = { model: MODEL, messages: [{ role: 'user' as const, content: `hello ${rid}` }] };
  const mine = (r: { rawBody: string }) => r.rawBody.includes(rid);
  const interrupt = async () => {
    if (!options.abort) return;
    // The generation in progress, not an earlier call of the same rollout.
    const record = await h.mock.waitFor((r) => mine(r) && r.completedAt === undefined && r.tokensGenerated >= 3);
    if (options.stream) {
      await post('/pause?mode=abort');
      await post('/resume');
    } else {
      await post('/abort_requests', { request_ids: [record.responseId] });
    }
  };
  if (!options.stream) {
    const [answer] = await Promise.all([h.client(rid).chat.completions.create(body), interrupt()]);
    return answer.choices[0]?.finish_reason;
  }
  const events = (await h
    .client(rid)
    .chat.completions.create({ ...body, stream: true })) as AsyncIterable<OpenAI.ChatCompletionChunk>;
  const interrupted = interrupt();
  let finish: unknown = null;
  for await (const event of events) finish = event.choices[0]?.finish_reason ?? finish;
  await interrupted;
  return finish;
}

async function abortedCount(): Promise<number> {
  const text = await (await fetch(`${h.gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`rollgate_calls_aborted_total{model="${MODEL}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe.each([false, true])('stream=%s', (stream) => {
  it('a vLLM abort reaches the agent unchanged, is marked aborted and counted', async () => {
    const rid = rolloutId('abort');
    const before = await abortedCount();
    expect(await chat(rid, { stream, abort: true })).toBe('abort');
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_CALL_OUTCOME]).toBe(A.CALL_OUTCOME_VALUE_ABORTED);
    expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]).toEqual(['abort']);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    // The ids the engine generated before the abort are all there: the call is complete, just not trainable.
    const [entry] = h.mock.ledger.byResponseId(String(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]));
    expect(entry?.status).toBe('aborted');
    expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(entry?.tokenIds);
    expect(await abortedCount()).toBe(before + 1);
  });

  it('a rollout that continued from an aborted answer yields no triplets and no rows', async () => {
    const rid = rolloutId('abort');
    expect(await chat(rid, { stream, abort: false })).toBe('stop');
    expect(await chat(rid, { stream, abort: true })).toBe('abort');
    const recorded = await h.spans(rid);
    expect(recorded).toHaveLength(2);
    const drops: TrainingDrop[] = [];
    expect(spansToTriplets(recorded, { onDropped: (d) => drops.push(d) })).toEqual([]);
    expect(drops.map((d) => d.reason)).toEqual(['aborted']);
    expect(spansToTrajectories(recorded)).toEqual([]);
  });
});
