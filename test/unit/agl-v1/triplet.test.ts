// The v1 `format=triplet` projection (docs/agl-v1.md), including its reference case and dedupe rule.
import { describe, expect, it } from 'vitest';
import type { V1Event } from '../../../src/agl-v1/events.js';
import { toTripletEvents } from '../../../src/agl-v1/triplet.js';
import type { JsonObject } from '../../../src/store/core/types.js';

function event(event_type: string, data: JsonObject): V1Event {
  return { event_type, rollout_id: 'r', attempt_id: '0', timestamp: '2026-01-01T00:00:00.000Z', data };
}

function modelRequest(prompt: number[], response: number[], extra: JsonObject = {}): V1Event {
  return event('model_request', {
    http_status: 200,
    status: 'ok',
    server: { model: 'm', endpoint: 'http://x/v1', version: 2 },
    response: {
      prompt_token_ids: prompt,
      choices: [{ token_ids: response, logprobs: { content: response.map((_, i) => ({ logprob: -i })) } }],
    },
    ...extra,
  });
}

describe('v1 triplet projection', () => {
  it('reference case: the last call per prompt survives at its own position', () => {
    const events = [
      modelRequest([1, 2], [10]),
      event('reward', { value: 1, source: 'judge', reason: 'r', noise: true }),
      modelRequest([3, 4], [20]),
      modelRequest([1, 2], [30]),
    ];
    const raw = events
      .filter((e) => e.event_type === 'model_request')
      .map((e) => ((e.data.response as JsonObject).choices as JsonObject[])[0]?.token_ids);
    expect(raw).toEqual([[10], [20], [30]]);
    const view = toTripletEvents(events);
    expect(view.map((e) => e.event_type)).toEqual(['reward', 'model_request', 'model_request']);
    const calls = view.filter((e) => e.event_type === 'model_request');
    expect(calls.map((e) => e.data.prompt_token_ids)).toEqual([
      [3, 4],
      [1, 2],
    ]);
    expect(calls.map((e) => e.data.response_token_ids)).toEqual([[20], [30]]);
    expect(calls[1]?.data).toEqual({
      prompt_token_ids: [1, 2],
      response_token_ids: [30],
      response_log_probs: [-0],
      server: { model: 'm', version: 2 },
      http_status: 200,
      status: 'ok',
    });
    expect(view[0]?.data).toEqual({ value: 1, source: 'judge', reason: 'r' });
  });

  it('reads completions logprobs and choice-level prompt ids; bad logprobs become null, never throw', () => {
    const completions = event('model_request', {
      response: {
        choices: [{ prompt_token_ids: [5], token_ids: [6, 7], logprobs: { token_logprobs: [-0.5, -1.5] } }],
      },
    });
    const nan = event('model_request', {
      response: { prompt_token_ids: [8], choices: [{ token_ids: [9], logprobs: { content: [{ logprob: 'x' }] } }] },
    });
    const junk = event('model_request', { response: 'not an object' });
    const [a, b, c] = toTripletEvents([completions, nan, junk]);
    expect(a?.data).toMatchObject({
      prompt_token_ids: [5],
      response_token_ids: [6, 7],
      response_log_probs: [-0.5, -1.5],
    });
    expect(b?.data.response_log_probs).toBeNull();
    expect(c?.data).toMatchObject({ prompt_token_ids: [], response_token_ids: [], response_log_probs: null });
  });

  it('concatenates a legacy list of SSE chunks; failed calls (empty prompt) collapse into the last one', () => {
    const chunks = event('model_request', {
      response: [{ prompt_token_ids: [1], choices: [{ token_ids: [2] }] }, { choices: [{ token_ids: [3, 4] }] }],
    });
    const err1 = event('model_request', { http_status: 500, status: 'error', response: { error: { message: 'a' } } });
    const err2 = event('model_request', { http_status: 502, status: 'error', response: { error: { message: 'b' } } });
    const view = toTripletEvents([chunks, err1, event('note', { text: 'kept' }), err2]);
    expect(view.map((e) => e.event_type)).toEqual(['model_request', 'note', 'model_request']);
    expect(view[0]?.data).toMatchObject({ prompt_token_ids: [1], response_token_ids: [2, 3, 4] });
    expect(view[1]?.data).toEqual({ text: 'kept' });
    expect(view[2]?.data).toMatchObject({ http_status: 502, status: 'error', error: { message: 'b' } });
  });
});

describe('v1 triplet projection keeps doubtful samples out', () => {
  const ids = (e: V1Event | undefined) => [e?.data.response_token_ids, e?.data.untrainable];

  it.each([
    ['vLLM', 'abort'],
    ['SGLang', { type: 'abort', message: 'Abort by scheduler' }],
  ])('an aborted %s call empties every call of the rollout', (_engine, finishReason) => {
    const abortedCall = modelRequest([1, 2, 10], [11]);
    const choices = (abortedCall.data.response as JsonObject).choices as JsonObject[];
    (choices[0] as JsonObject).finish_reason = finishReason;
    const view = toTripletEvents([modelRequest([1, 2], [10]), abortedCall, event('reward', { value: 1 })]);
    expect(view.map(ids)).toEqual([
      [[], 'rollout_aborted'],
      [[], 'aborted'],
      [undefined, undefined],
    ]);
    expect(view[1]?.data.response_log_probs).toBeNull();
  });

  it('an aborted call sent again with the same prompt is absorbed by the dedupe and taints nothing', () => {
    const resent = toTripletEvents([
      modelRequest([1, 2], [10], { finish_reason: 'abort' }),
      modelRequest([1, 2], [10, 12]),
    ]);
    expect(resent.map(ids)).toEqual([[[10, 12], undefined]]);
    const kept = toTripletEvents([modelRequest([1], [3]), modelRequest([1, 3, 4], [10], { finish_reason: 'abort' })]);
    expect(kept.map(ids)).toEqual([
      [[], 'rollout_aborted'],
      [[], 'aborted'],
    ]);
  });

  it('the reason rollgate recorded with the call, or a usage count the ids miss, makes it untrainable', () => {
    const recorded = modelRequest([1], [2], { untrainable: 'incomplete_token_ids' });
    const short = modelRequest([3], [4, 5]);
    (short.data.response as JsonObject).usage = { prompt_tokens: 1, completion_tokens: 3 };
    const view = toTripletEvents([recorded, short, modelRequest([6], [7])]);
    expect(view.map(ids)).toEqual([
      [[], 'incomplete_token_ids'],
      [[], 'token_count_mismatch'],
      [[7], undefined],
    ]);
  });

  it('a -9999 placeholder logprob makes the logprobs null, the ids stay', () => {
    const call = modelRequest([1], [2, 3]);
    const choice = ((call.data.response as JsonObject).choices as JsonObject[])[0] as JsonObject;
    choice.logprobs = { content: [{ logprob: -0.5 }, { logprob: -9999.0 }] };
    const [view] = toTripletEvents([call]);
    expect(view?.data).toMatchObject({ response_token_ids: [2, 3], response_log_probs: null });
  });
});
