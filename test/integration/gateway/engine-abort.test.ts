// An engine abort (vLLM `/pause`, `/sleep`, `/abort_requests`, a cancel; SGLang's scheduler) reaches the agent as a
// normal answer: finish reason "abort" (SGLang: `{type: "abort"}`) then `[DONE]`, or Responses status "cancelled".
// The gateway passes it on as it came, marks the call aborted on its span, counts it in /metrics, and no reader
// turns it (or the rollout that continued from it) into a training sample.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../../../src/adapters/triplets.js';
import type { Span } from '../../../src/store/types.js';
import * as A from '../../../src/tracing/attributes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  type ScriptedAnswer,
  type ScriptedRequest,
  type ScriptedUpstream,
  startScriptedUpstream,
} from '../../helpers/scripted-upstream.js';
import { rolloutId } from './harness.js';

const MODEL = 'engine';
const PROMPT_IDS = [1, 2, 3];
let served = 0;

/** What the engine answers: `script` in the body picks the finish (the gateway forwards unknown keys). */
function engine(request: ScriptedRequest): ScriptedAnswer {
  served += 1;
  const id = `chatcmpl-${served}`;
  const script = request.body.script;
  if (request.path.endsWith('/responses')) {
    return {
      json: {
        id: `resp_${served}`,
        object: 'response',
        created_at: 0,
        model: MODEL,
        status: 'cancelled',
        output: [
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'Hal', annotations: [] }],
          },
        ],
        usage: { input_tokens: 3, output_tokens: 3, total_tokens: 6 },
      },
    };
  }
  const finish =
    script === 'ok' ? 'stop' : script === 'sglang-abort' ? { type: 'abort', message: 'Abort by scheduler' } : 'abort';
  const usage = { prompt_tokens: PROMPT_IDS.length, completion_tokens: 3, total_tokens: PROMPT_IDS.length + 3 };
  if (request.body.stream !== true) {
    return {
      json: {
        id,
        object: 'chat.completion',
        created: 0,
        model: MODEL,
        prompt_token_ids: PROMPT_IDS,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Hal' },
            logprobs: null,
            finish_reason: finish,
            token_ids: [72, 97, 108],
          },
        ],
        usage,
      },
    };
  }
  const chunk = (choice: Record<string, unknown>) => ({
    id,
    object: 'chat.completion.chunk',
    created: 0,
    model: MODEL,
    choices: [choice],
  });
  return {
    events: [
      {
        ...chunk({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }),
        prompt_token_ids: PROMPT_IDS,
      },
      chunk({ index: 0, delta: { content: 'Ha' }, logprobs: null, finish_reason: null, token_ids: [72, 97] }),
      chunk({ index: 0, delta: { content: 'l' }, logprobs: null, finish_reason: finish, token_ids: [108] }),
      { id, object: 'chat.completion.chunk', created: 0, model: MODEL, choices: [], usage },
    ],
  };
}

let upstream: ScriptedUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startScriptedUpstream(engine);
  gw = await startTestGateway({ models: [{ name: MODEL, backends: [{ url: upstream.url }] }] });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

function client(rid: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent-key', maxRetries: 0 });
}

async function chat(rid: string, script: string, stream: boolean): Promise<unknown> {
  const body = { model: MODEL, messages: [{ role: 'user' as const, content: 'hello' }], script };
  if (!stream)
    return ((await client(rid).chat.completions.create(body as never)) as OpenAI.ChatCompletion).choices[0]
      ?.finish_reason;
  let finish: unknown = null;
  const events = (await client(rid).chat.completions.create({
    ...body,
    stream: true,
  } as never)) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
  for await (const event of events) finish = event.choices[0]?.finish_reason ?? finish;
  return finish;
}

async function spans(rid: string): Promise<Span[]> {
  return (await gw.gateway.store.querySpans(rid)).items;
}

async function abortedCount(): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`rollgate_calls_aborted_total{model="${MODEL}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe.each([false, true])('stream=%s', (stream) => {
  it.each([
    ['vLLM', 'vllm-abort', 'abort'],
    ['SGLang', 'sglang-abort', { type: 'abort', message: 'Abort by scheduler' }],
  ])('a %s abort reaches the agent unchanged, is marked aborted and counted', async (_engine, script, seen) => {
    const rid = rolloutId('abort');
    const before = await abortedCount();
    expect(await chat(rid, script, stream)).toEqual(seen);
    const [span] = await spans(rid);
    expect(span?.attributes[A.ATTR_CALL_OUTCOME]).toBe(A.CALL_OUTCOME_VALUE_ABORTED);
    expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]).toEqual(['abort']);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    expect(await abortedCount()).toBe(before + 1);
  });

  it('a rollout that continued from an aborted answer yields no triplets and no rows', async () => {
    const rid = rolloutId('abort');
    expect(await chat(rid, 'ok', stream)).toBe('stop');
    await chat(rid, 'vllm-abort', stream);
    const recorded = await spans(rid);
    expect(recorded).toHaveLength(2);
    const drops: TrainingDrop[] = [];
    expect(spansToTriplets(recorded, { onDropped: (d) => drops.push(d) })).toEqual([]);
    expect(drops.map((d) => d.reason)).toEqual(['aborted']);
    expect(spansToTrajectories(recorded)).toEqual([]);
  });
});

it('a cancelled Responses API answer is marked aborted', async () => {
  const rid = rolloutId('abort');
  const response = await client(rid).responses.create({ model: MODEL, input: 'hello' });
  expect(response.status).toBe('cancelled');
  const [span] = await spans(rid);
  expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]).toEqual(['abort']);
  expect(span?.attributes[A.ATTR_CALL_OUTCOME]).toBe(A.CALL_OUTCOME_VALUE_ABORTED);
});
