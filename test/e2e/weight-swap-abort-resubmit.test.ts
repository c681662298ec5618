// swap.mode "abort-resubmit" (docs/weight-swaps.md): the swap aborts the generations in flight (vLLM
// /pause?mode=abort) and the gateway sends every aborted non-stream call again once the new weights are loaded; the
// openai-SDK agent only waits and gets an answer computed by the new weights alone. A completions stream is
// continued: the agent keeps the tokens it got, and a resubmission prompted with the prompt ids plus those tokens
// generates the rest on the same stream. A chat stream cannot be continued faithfully: it ends with a retryable
// error instead of an aborted answer that looks complete. The aborted try keeps its own span (finish_reason abort),
// which the RL batch never takes as a sample, and the rollout stays trainable.
import { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { anthropicAgents } from '../helpers/anthropic-agent.js';
import { SwapRig as Rig, SWAP_POOL, type SwapRig, swapBatch, weightsVersion } from '../helpers/swap-rig.js';

/** What the twin completes `Q:` with; given part of it after `Q:`, it completes the rest. */
const TARGET = 'abcdefghijklmnopqrstuvwxyz0123456789ABCD';

function batchOf(
  rig: SwapRig,
  rid: string,
  currentVersion: number,
  staleness: { readonly maxStaleness?: number; readonly staleTokens?: 'drop' | 'mask' } = {},
) {
  return swapBatch(rig.gw.gateway.store, [rid], { currentVersion, ...staleness });
}

describe('abort-resubmit mode', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'abort-resubmit', twin: { paceNonStream: true } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('a non-stream call aborted by the swap is sent again under the new weights: the agent just waits', async () => {
    const rid = `resubmit-nonstream-${process.pid}`;
    const client = rig.agent(rid);
    const call = client.chat.completions.create({ model: SWAP_POOL, messages: [{ role: 'user', content: rid }] });
    await rig.twin.waitFor((r) => r.rawBody.includes(rid) && r.tokensGenerated >= 5);
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    expect(swap.body.swap).toMatchObject({ mode: 'abort-resubmit', version: 2, drained_backends: [] });
    const answer = await call;
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(answer.choices[0]?.message.content).toBe('x'.repeat(40));

    const generations = rig.twin.ledger.entries.filter((e) => e.endpoint === 'chat');
    expect(generations.map((e) => e.finishReason)).toEqual(['abort', 'stop']);
    // The answer the agent got was computed by the new weights alone.
    const [, resubmitted] = generations;
    expect(resubmitted?.responseId).toBe(answer.id);
    expect(new Set(resubmitted?.weights.map(weightsVersion))).toEqual(new Set([2]));

    const spans = await rig.spans([rid]);
    expect(spans.map((s) => s.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS])).toEqual([['abort'], ['stop']]);
    expect(new Set(spans.map((s) => s.sequence_id)).size).toBe(2);
    expect(spans[1]?.attributes[A.ATTR_MODEL_VERSION]).toBe(2);
    expect(spans[1]?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);

    // Training sees only the whole answer, as version 2.
    const batch = await batchOf(rig, rid, 2);
    expect(batch.samples).toHaveLength(1);
    expect(batch.samples[0]?.sequence_ids).toEqual([spans[1]?.sequence_id]);
    expect(new Set(batch.samples[0]?.token_versions)).toEqual(new Set([2]));
    expect(await (await fetch(`${rig.twin.baseUrl}/is_paused`)).json()).toEqual({ is_paused: false });
  }, 30_000);

  it('an aborted stream ends with a retryable error, never with an aborted answer that looks complete', async () => {
    const rid = `resubmit-stream-${process.pid}`;
    const client = rig.agent(rid);
    const stream = await client.chat.completions.create({
      model: SWAP_POOL,
      messages: [{ role: 'user', content: rid }],
      stream: true,
    });
    await rig.twin.waitFor((r) => r.rawBody.includes(rid) && r.tokensSent >= 5);
    const reading = (async () => {
      const reasons: string[] = [];
      for await (const chunk of stream) {
        const reason = chunk.choices[0]?.finish_reason;
        if (reason) reasons.push(reason);
      }
      return reasons;
    })().then(
      (reasons) => reasons,
      (e: unknown) => e,
    );
    expect((await rig.post('/v1/rl/weights', { version: 3, lora_path: '/ckpt/3' })).status).toBe(200);
    const error = await reading;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('weights_swapped');
    // The agent calls again and gets a whole answer under the new weights.
    const again = await client.chat.completions.create({
      model: SWAP_POOL,
      messages: [{ role: 'user', content: rid }],
    });
    expect(again.choices[0]?.finish_reason).toBe('stop');
    // The aborted partial never reaches training: the batch's one sample is the call made again.
    const spans = await rig.spans([rid]);
    expect(spans.map((x) => x.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS])).toEqual([['abort'], ['stop']]);
    const batch = await batchOf(rig, rid, 3);
    expect(batch.samples.map((x) => x.sequence_ids)).toEqual([[spans[1]?.sequence_id]]);
  }, 30_000);

  it('an aborted Messages API stream that relayed tokens ends with an overloaded_error the agent retries', async () => {
    const rid = `resubmit-messages-${process.pid}`;
    const agents = anthropicAgents(rig.gw.url);
    try {
      const stream = await agents.client(rid).messages.create({
        model: SWAP_POOL,
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: rid }],
      });
      await rig.twin.waitFor((r) => r.rawBody.includes(rid) && r.tokensSent >= 5);
      const reading = (async () => {
        for await (const _event of stream) {
          // drained to the end or the error
        }
      })().then(
        () => null,
        (e: unknown) => e,
      );
      expect((await rig.post('/v1/rl/weights', { version: 4, lora_path: '/ckpt/4' })).status).toBe(200);
      const error = await reading;
      expect(error).toBeInstanceOf(AnthropicAPIError);
      expect((error as AnthropicAPIError).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
      const batch = await batchOf(rig, rid, 4);
      expect(batch.samples).toEqual([]);
    } finally {
      await agents.close();
    }
  }, 30_000);
});

describe('abort-resubmit mode, streams aborted before their first token', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    // A long time to first token: the swap aborts the generations while the agents have got nothing yet.
    rig = await Rig.start({ mode: 'abort-resubmit', twin: { ttftMs: 1500 } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('a chat stream that relayed no token is sent again on the same response: the agent gets the whole answer', async () => {
    const rid = `resubmit-unstarted-${process.pid}`;
    const client = rig.agent(rid);
    const reading = (async () => {
      const stream = await client.chat.completions.create({
        model: SWAP_POOL,
        messages: [{ role: 'user', content: rid }],
        stream: true,
      });
      let text = '';
      const reasons: string[] = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        const reason = chunk.choices[0]?.finish_reason;
        if (reason) reasons.push(reason);
      }
      return { text, reasons };
    })();
    await rig.twin.waitFor((r) => r.rawBody.includes(rid));
    expect((await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' })).status).toBe(200);
    const got = await reading;
    expect(got).toEqual({ text: 'x'.repeat(40), reasons: ['stop'] });

    const generations = rig.twin.ledger.entries.filter((e) => e.endpoint === 'chat');
    expect(generations.map((e) => e.finishReason)).toEqual(['abort', 'stop']);
    expect(generations[0]?.tokenIds ?? []).toEqual([]);
    expect(new Set(generations[1]?.weights.map(weightsVersion))).toEqual(new Set([2]));
    const spans = await rig.spans([rid]);
    expect(spans).toHaveLength(2);
    expect(spans[1]?.attributes[A.ATTR_RESUBMIT_OF]).toBe(spans[0]?.sequence_id);
    const batch = await batchOf(rig, rid, 2);
    expect(batch.samples.map((x) => x.sequence_ids)).toEqual([[spans[1]?.sequence_id]]);
    expect(new Set(batch.samples[0]?.token_versions)).toEqual(new Set([2]));
  }, 30_000);

  it('a Messages API stream that relayed no token is sent again too: the Anthropic agent reads one whole answer', async () => {
    const rid = `resubmit-unstarted-messages-${process.pid}`;
    const agents = anthropicAgents(rig.gw.url);
    try {
      const reading = (async () => {
        const stream = await agents.client(rid).messages.create({
          model: SWAP_POOL,
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: rid }],
        });
        let text = '';
        const types: string[] = [];
        for await (const event of stream) {
          types.push(event.type);
          if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        }
        return { text, starts: types.filter((t) => t === 'message_start').length, last: types.at(-1) };
      })();
      await rig.twin.waitFor((r) => r.rawBody.includes(rid));
      expect((await rig.post('/v1/rl/weights', { version: 3, lora_path: '/ckpt/3' })).status).toBe(200);
      expect(await reading).toEqual({ text: 'x'.repeat(40), starts: 1, last: 'message_stop' });
    } finally {
      await agents.close();
    }
  }, 30_000);
});

describe('abort-resubmit mode, completions streams', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({
      mode: 'abort-resubmit',
      twin: { respond: (prompt) => TARGET.slice(prompt.text.slice(prompt.text.indexOf('Q:') + 2).length) },
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('continues an aborted completions stream from its tokens so far: the agent gets the whole text', async () => {
    const rid = `resubmit-completions-${process.pid}`;
    const client = rig.agent(rid);
    const stream = await client.completions.create({ model: SWAP_POOL, prompt: 'Q:', max_tokens: 64, stream: true });
    await rig.twin.waitFor((r) => r.path === '/v1/completions' && r.tokensGenerated >= 5);
    const reading = (async () => {
      let text = '';
      const reasons: string[] = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        const reason = chunk.choices[0]?.finish_reason;
        if (reason) reasons.push(reason);
      }
      return { text, reasons };
    })();
    expect((await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' })).status).toBe(200);
    const got = await reading;
    expect(got).toEqual({ text: TARGET, reasons: ['stop'] });

    const [aborted, rest] = rig.twin.ledger.entries.filter((e) => e.endpoint === 'completions');
    expect(aborted?.finishReason).toBe('abort');
    expect(rest?.finishReason).toBe('stop');
    const relayed = aborted?.tokenIds.length ?? 0;
    expect(relayed).toBeGreaterThan(0);
    expect(relayed).toBeLessThan(TARGET.length);
    // The continuation was prompted with the prompt ids and the tokens so far, and computed by the new weights.
    expect(rest?.promptIds).toEqual([...(aborted?.promptIds ?? []), ...(aborted?.tokenIds ?? [])]);
    const sent = rig.twin.requests
      .filter((r) => r.path === '/v1/completions')
      .map((r) => r.body as { max_tokens: number });
    expect(sent.map((b) => b.max_tokens)).toEqual([64, 64 - relayed]);
    expect(new Set(rest?.weights.map(weightsVersion))).toEqual(new Set([2]));
    expect(new Set(aborted?.weights.map(weightsVersion))).toEqual(new Set([1]));

    const spans = await rig.spans([rid]);
    expect(spans).toHaveLength(2);
    const [abortedSpan, continued] = spans;
    expect(continued?.attributes[A.ATTR_RESUBMIT_OF]).toBe(abortedSpan?.sequence_id);
    expect(continued?.attributes[A.ATTR_MODEL_VERSION]).toBe(2);
    // The continuation's span is the answer as the agent saw it: the original prompt, every token it read, the
    // old weights' tokens as version 1 and the rest as version 2.
    expect(continued?.attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(aborted?.promptIds);
    const whole = [...(aborted?.tokenIds ?? []), ...(rest?.tokenIds ?? [])];
    expect(continued?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(whole);
    expect((continued?.attributes[A.ATTR_RESPONSE_LOGPROBS] as unknown[] | undefined)?.length).toBe(whole.length);
    expect(JSON.parse(String(continued?.attributes[A.ATTR_MODEL_VERSION_SEGMENTS]))).toEqual([
      [0, relayed, 1],
      [relayed, whole.length, 2],
    ]);
    expect(continued?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);
    // The rollout stays trainable: its sample is that trajectory, with a version per token.
    const batch = await batchOf(rig, rid, 2, { maxStaleness: 1 });
    expect(batch.stats.dropped.aborted_rollouts).toBe(0);
    expect(batch.samples.map((x) => x.sequence_ids)).toEqual([[continued?.sequence_id]]);
    const sample = batch.samples[0];
    expect(sample?.token_versions).toEqual([
      ...new Array<number>(relayed).fill(1),
      ...new Array<number>(whole.length - relayed).fill(2),
    ]);
    expect(sample?.model_version).toBe(1);
    // maxStaleness judges every token: version 1's are too old at staleness 0, dropped or masked.
    const dropped = await batchOf(rig, rid, 2, { maxStaleness: 0 });
    expect(dropped.samples).toEqual([]);
    expect(dropped.stats.dropped.stale).toBe(1);
    const masked = await batchOf(rig, rid, 2, { maxStaleness: 0, staleTokens: 'mask' });
    expect(masked.stats.dropped.stale_tokens).toBe(relayed);
    const mask = masked.samples[0]?.response_mask ?? [];
    expect(mask.slice(0, relayed).every((m) => m === 0)).toBe(true);
    expect(mask.slice(relayed).every((m) => m === 1)).toBe(true);
  }, 30_000);
});
