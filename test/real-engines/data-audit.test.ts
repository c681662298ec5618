// The training-data audit on real generations: SDK agents (stream and not, tools offered, multi-turn) through a real
// gateway to real vLLM 0.32.0, every sample of the RL batch, the exports and the triplets checked against what vLLM
// itself returned (an HTTP tap between the two), and every sampled token's logprob recomputed by a transformers
// forward pass over the same safetensors ("trainable exactly").
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spansToTriplets } from '../../src/adapters/triplets.js';
import { exportRows } from '../../src/commands/export.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { REPO_ROOT } from '../helpers/python.js';
import { tempFilePath } from '../helpers/temp-path.js';
import { type EngineTap, startEngineTap } from './engine-tap.js';
import { realEngineHome } from './vllm-server.js';

const RELEASES = [
  ['0.32.0', inject('vllm')],
  ['0.29.0', inject('vllmOld')],
] as const;

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'run_shell',
      description: 'Run a shell command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

describe.each(RELEASES)('data audit on real vLLM %s', (_release, vllm) => {
  let tap: EngineTap;
  let gw: TestGateway;

  beforeAll(async () => {
    tap = await startEngineTap(vllm.baseUrl);
    const pool = (name: string, history: Record<string, unknown>, responses: 'via-chat' | 'relay' = 'via-chat') => ({
      name,
      upstreamModel: vllm.servedName,
      backends: [{ url: tap.url }],
      logprobs: 'always' as const,
      logprobsMode: 'processed' as const,
      history,
      // Responses agents (Codex's API) are served from the engine's chat route, where token ids come back; the
      // `relay` pool sends them to vLLM's own Responses route (the default for a pool).
      responses,
    });
    gw = await startTestGateway({
      store: { kind: 'sqlite', path: tempFilePath('real-audit.db') },
      models: [
        pool('policy', { mode: 'as-sent' }),
        pool('faithful', { mode: 'faithful', family: 'qwen3' }),
        pool('relay', { mode: 'as-sent' }, 'relay'),
      ],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await tap?.close();
  });

  function agent(rolloutId: string): OpenAI {
    return new OpenAI({ baseURL: `${gw.url}/rollout/${rolloutId}/attempt/a1/v1`, apiKey: 'none', maxRetries: 0 });
  }

  /** A multi-turn agent: each turn appends the model's answer (and a tool result when it called a tool). */
  async function runAgent(client: OpenAI, model: string, turns: number, stream: boolean): Promise<number> {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a careful coding agent.' },
      { role: 'user', content: 'List the files, then say done.' },
    ];
    for (let turn = 0; turn < turns; turn++) {
      const params = { model, messages, tools: TOOLS, max_tokens: 24, temperature: 1 };
      let content = '';
      if (stream) {
        const s = await client.chat.completions.create({ ...params, stream: true });
        for await (const chunk of s) content += chunk.choices[0]?.delta?.content ?? '';
      } else {
        const r = await client.chat.completions.create(params);
        content = r.choices[0]?.message.content ?? '';
      }
      messages.push({ role: 'assistant', content });
      messages.push({ role: 'user', content: `Turn ${turn + 1} noted. Continue.` });
    }
    return turns;
  }

  async function runAnthropicAgent(rolloutId: string, model: string, turns: number, stream: boolean): Promise<void> {
    const client = new Anthropic({
      baseURL: `${gw.url}/rollout/${rolloutId}/attempt/a1`,
      apiKey: 'none',
      maxRetries: 0,
    });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'List the files, then say done.' }];
    for (let turn = 0; turn < turns; turn++) {
      const params = { model, max_tokens: 24, system: 'You are a careful coding agent.', messages };
      const message = stream
        ? await client.messages.stream(params).finalMessage()
        : await client.messages.create(params);
      const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
      messages.push({ role: 'assistant', content: text || '.' });
      messages.push({ role: 'user', content: `Turn ${turn + 1} noted. Continue.` });
    }
  }

  async function runResponsesAgent(client: OpenAI, model: string, turns: number, stream: boolean): Promise<void> {
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'List the files, then say done.' }];
    for (let turn = 0; turn < turns; turn++) {
      const params = { model, input, instructions: 'You are a careful coding agent.', max_output_tokens: 24 };
      const response = stream
        ? await client.responses.stream(params).finalResponse()
        : await client.responses.create(params);
      input.push({ role: 'assistant', content: response.output_text || '.' });
      input.push({ role: 'user', content: `Turn ${turn + 1} noted. Continue.` });
    }
  }

  interface Sample {
    readonly source: string;
    readonly promptIds: readonly number[];
    readonly responseIds: readonly number[];
    readonly responseMask: readonly number[];
    readonly logprobs: readonly number[] | null;
  }

  /** Problems of one sample against the tap: each generated run of ids must be one answer vLLM gave, after the
   * exact prompt it was given, with its logprobs. */
  function checkAgainstTap(sample: Sample): string[] {
    const problems: string[] = [];
    const context = [...sample.promptIds];
    let i = 0;
    while (i < sample.responseIds.length) {
      if (sample.responseMask[i] === 0) {
        context.push(sample.responseIds[i] as number);
        i++;
        continue;
      }
      let end = i;
      while (end < sample.responseIds.length && sample.responseMask[end] === 1) end++;
      const ids = sample.responseIds.slice(i, end);
      const match = tap.choices.find(
        (c) =>
          c.responseIds.length === ids.length &&
          c.responseIds.every((id, k) => id === ids[k]) &&
          c.promptIds.length === context.length &&
          c.promptIds.every((id, k) => id === context[k]),
      );
      if (!match) problems.push(`${sample.source}: tokens ${i}..${end} are no answer vLLM gave after that prompt`);
      else if (sample.logprobs !== null) {
        const got = sample.logprobs.slice(i, end);
        if (match.logprobs === null || got.some((lp, k) => lp !== match.logprobs?.[k]))
          problems.push(`${sample.source}: logprobs of tokens ${i}..${end} differ from vLLM's`);
      }
      context.push(...ids);
      i = end;
    }
    return problems;
  }

  {
    const rollouts: { id: string; model: string; turns: number; stream: boolean; api?: 'anthropic' | 'responses' }[] = [
      { id: 'real-single', model: 'policy', turns: 1, stream: false },
      { id: 'real-single-stream', model: 'policy', turns: 1, stream: true },
      { id: 'real-multi', model: 'policy', turns: 3, stream: false },
      { id: 'real-faithful', model: 'faithful', turns: 3, stream: false },
      { id: 'real-faithful-stream', model: 'faithful', turns: 3, stream: true },
      // The other APIs agents speak, translated to the engine's chat route (Claude Code's and Codex's path).
      { id: 'real-anthropic', model: 'policy', turns: 2, stream: false, api: 'anthropic' },
      { id: 'real-anthropic-stream', model: 'policy', turns: 2, stream: true, api: 'anthropic' },
      { id: 'real-responses', model: 'policy', turns: 2, stream: false, api: 'responses' },
      { id: 'real-responses-stream', model: 'policy', turns: 2, stream: true, api: 'responses' },
      // vLLM's own Responses route (non-stream: its streams carry no token ids, so those calls are never samples).
      { id: 'real-responses-relay', model: 'relay', turns: 2, stream: false, api: 'responses' },
    ];
    const samples: Sample[] = [];

    it('records every call of SDK agents with the ids and logprobs vLLM returned', async () => {
      for (const r of rollouts) {
        if (r.api === 'anthropic') await runAnthropicAgent(r.id, r.model, r.turns, r.stream);
        else if (r.api === 'responses') await runResponsesAgent(agent(r.id), r.model, r.turns, r.stream);
        else await runAgent(agent(r.id), r.model, r.turns, r.stream);
      }
      const store = gw.gateway.store;
      for (const r of rollouts) {
        const spans = (await store.querySpans(r.id)).items;
        const triplets = spansToTriplets(spans);
        expect(triplets.length, `${r.id}: one triplet per call`).toBe(r.turns);
        for (const t of triplets) {
          samples.push({
            source: `triplet ${r.id}#${t.metadata.sequence_id}`,
            promptIds: t.prompt.token_ids,
            responseIds: t.response.token_ids,
            responseMask: t.response.token_ids.map(() => 1),
            logprobs: t.response.logprobs ?? null,
          });
        }
        await store.updateAttempt(r.id, 'a1', { status: 'succeeded' });
      }
      const problems = samples.flatMap(checkAgainstTap);
      expect(problems).toEqual([]);
    });

    it('export rows match vLLM token for token; a faithful rollout is one row', async () => {
      const rows: Sample[] = [];
      const rowsPerRollout = new Map<string, number>();
      for await (const row of exportRows({
        store: gw.gateway.store,
        level: 'trajectory',
        rolloutIds: rollouts.map((r) => r.id),
      })) {
        rowsPerRollout.set(row.rollout_id, (rowsPerRollout.get(row.rollout_id) ?? 0) + 1);
        rows.push({
          source: `export ${row.rollout_id}`,
          promptIds: row.prompt_ids,
          responseIds: row.response_ids,
          responseMask: row.response_mask,
          logprobs: row.logprobs,
        });
      }
      expect(rows.flatMap(checkAgainstTap)).toEqual([]);
      expect(rowsPerRollout.get('real-faithful')).toBe(1);
      expect(rowsPerRollout.get('real-faithful-stream')).toBe(1);
      samples.push(...rows);
    });

    it('a stream the agent abandons ends in vLLM too, is recorded partial and is kept out of training', async () => {
      const rolloutId = 'real-abandoned';
      const controller = new AbortController();
      const stream = await agent(rolloutId).chat.completions.create(
        {
          model: 'policy',
          messages: [{ role: 'user', content: 'Write a long story.' }],
          max_tokens: 2000,
          stream: true,
        },
        { signal: controller.signal },
      );
      let chunks = 0;
      for await (const _ of stream) {
        if (++chunks === 3) {
          controller.abort();
          break;
        }
      }
      expect(chunks).toBe(3);
      const store = gw.gateway.store;
      let spans = (await store.querySpans(rolloutId)).items;
      for (let i = 0; i < 100 && spans.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        spans = (await store.querySpans(rolloutId)).items;
      }
      // A call the client left is recorded with the ids it got so far, marked partial (docs/training-data.md).
      expect(spans.map((span) => span.attributes['rollgate.token_ids.status'])).toEqual(['partial']);
      // vLLM stopped generating: nothing is left running (a leaked request would hold the engine for 2000 tokens).
      let running = Number.NaN;
      for (let i = 0; i < 50 && running !== 0; i++) {
        const text = await (await fetch(`${vllm.baseUrl}/metrics`)).text();
        running = Number(/^vllm:num_requests_running\{[^}]*\} (\S+)$/m.exec(text)?.[1]);
        if (running !== 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(running).toBe(0);
      await store.updateAttempt(rolloutId, 'a1', { status: 'succeeded' });
      const drops: string[] = [];
      let rows = 0;
      for await (const _ of exportRows({
        store,
        level: 'trajectory',
        rolloutIds: [rolloutId],
        onDropped: (drop) => drops.push(drop.reason),
      }))
        rows++;
      expect(rows).toBe(0);
      // The call the client left is left out of training and counted (docs/training-data.md).
      expect(drops).toEqual(['failed_call']);
      expect(spans[0]?.status.status_code).toBe('ERROR');
    });

    it('every recorded logprob is the one a forward pass of the same weights gives (trainable exactly)', async () => {
      const rows = samples.filter((s) => s.source.startsWith('export') && s.logprobs !== null);
      expect(rows.length).toBeGreaterThan(0);
      const home = realEngineHome();
      const out = execFileSync(home.python, [join(REPO_ROOT, 'test/real-engines/recompute_logprobs.py')], {
        input: JSON.stringify({
          model_dir: vllm.modelDir,
          rows: rows.map((r) => ({ prompt_ids: r.promptIds, response_ids: r.responseIds, temperature: 1 })),
        }),
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      const recomputed = (JSON.parse(out) as { logprobs: number[][] }).logprobs;
      const errors: number[] = [];
      rows.forEach((row, r) => {
        row.responseIds.forEach((_, k) => {
          if (row.responseMask[k] !== 1) return;
          errors.push(Math.abs((row.logprobs?.[k] ?? Number.NaN) - (recomputed[r]?.[k] ?? Number.NaN)));
        });
      });
      errors.sort((a, b) => a - b);
      const q = (p: number) => errors[Math.min(errors.length - 1, Math.floor(p * errors.length))] ?? Number.NaN;
      console.log(
        `logprob recomputation: ${errors.length} sampled tokens in ${rows.length} rows; |recorded - recomputed| ` +
          `p50 ${q(0.5).toExponential(2)}, p99 ${q(0.99).toExponential(2)}, max ${q(1).toExponential(2)}`,
      );
      // float32 on both sides, different kernels: agreement to 1e-3 nats; a token whose logprob is off by more
      // was not sampled from these weights after this prompt.
      expect(q(1)).toBeLessThan(1e-3);
    });
  }
});
