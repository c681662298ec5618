// The data audit, engine side: agents on the openai SDK drive a real gateway in front of the vLLM twin (qwen3
// mode) while every class of real-engine corruption is injected: aborts mid-stream and before the first token,
// parser streams that lose ids, token-id faults, hidden reasoning, -9999 / null logprobs, stop strings, several
// prompts in one completions call, raw logprobs under temperature 0.7. Each case then builds an RL batch, the
// three export levels and triplets from the store, and asserts zero corrupted samples: every emitted sample true
// to the twin's ledger, every left-out call counted under its reason in stats.dropped and /metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequestRecord, MockVllm } from '../servers/mock-vllm.js';
import { type AgentTurn, chatAgent, chatTurn, SYSTEM_PROMPT, toolAgent } from './agents.js';
import { type AttemptHandle, AuditRig, FLOOR, POLICY, RAW, SLOW } from './rig.js';

let rig: AuditRig;
beforeAll(async () => {
  rig = await AuditRig.start();
});
afterAll(async () => {
  await rig?.close();
});

/** Runs `agent` on fresh attempts and audits them; returns the report for case-specific checks. */
async function auditCase(runs: Array<(a: AttemptHandle) => Promise<unknown>>) {
  const before = await rig.metrics();
  const attempts: AttemptHandle[] = [];
  for (const run of runs) {
    const a = await rig.attempt();
    await run(a);
    await rig.finish(a);
    attempts.push(a);
  }
  const report = await rig.audit(attempts, before);
  expect(report.problems).toEqual([]);
  return report;
}

/** The generation request of this rollout on `twin` once `ready` holds for it (no sleeps: the twin's records). */
function generating(twin: MockVllm, rolloutId: string, ready: (r: MockRequestRecord) => boolean) {
  return twin.waitFor(
    (r) => r.path.startsWith('/v1/') && r.rawBody.includes(rolloutId) && r.completedAt === undefined && ready(r),
  );
}

const question = (a: AttemptHandle, text: string) => `${text} (${a.rolloutId})`;

describe('clean traffic', () => {
  it('tool and chat agents, streaming or not, thinking or not', async () => {
    const runs: Array<(a: AttemptHandle) => Promise<unknown>> = [];
    for (const stream of [false, true]) {
      for (const think of [false, true]) {
        runs.push((a) =>
          toolAgent(a.client, {
            model: POLICY,
            stream,
            question: question(a, 'What does "quixotic" mean?'),
            extra: { chat_template_kwargs: { enable_thinking: think } },
          }),
        );
      }
      runs.push((a) =>
        chatAgent(a.client, { model: POLICY, stream, question: question(a, 'Define "apple".'), turns: 3 }),
      );
    }
    const report = await auditCase(runs);
    expect(report.batch.samples.length).toBeGreaterThanOrEqual(6);
    // The chat agents' turns continue each other token for token: rows merge, with the user turns masked.
    expect(report.batch.samples.some((s) => s.response_mask.includes(0))).toBe(true);
  });
});

describe('engine aborts', () => {
  it('/pause?mode=abort mid-stream: the agent went on from the truncated answer, so the rollout is left out', async () => {
    const report = await auditCase([
      async (a) => {
        const run = chatAgent(a.client, { model: SLOW, stream: true, question: question(a, 'Count.'), turns: 2 });
        await generating(rig.twins.slow, a.rolloutId, (r) => r.tokensSent >= 5);
        await rig.post(rig.twins.slow, '/pause?mode=abort');
        await rig.post(rig.twins.slow, '/resume');
        const turns = await run;
        expect(turns[0]?.finishReason).toBe('abort');
      },
    ]);
    expect(report.batch.samples).toEqual([]);
    expect(report.batch.stats.dropped.aborted_rollouts).toBe(1);
  });

  it('an aborted call the agent re-sent is superseded: the rollout trains on the re-sent answer', async () => {
    const report = await auditCase([
      async (a) => {
        const body = {
          model: SLOW,
          messages: [
            { role: 'system', content: SYSTEM_PROMPT },
            { role: 'user', content: question(a, 'Count again.') },
          ],
        };
        const first = chatTurn(a.client, body, { stream: true });
        await generating(rig.twins.slow, a.rolloutId, (r) => r.tokensSent >= 5);
        await rig.post(rig.twins.slow, '/pause?mode=abort');
        await rig.post(rig.twins.slow, '/resume');
        let turn: AgentTurn = await first;
        expect(turn.finishReason).toBe('abort');
        // What RL agent loops do with an engine abort: send the same request again.
        while (turn.finishReason === 'abort') turn = await chatTurn(a.client, body, { stream: true });
      },
    ]);
    expect(report.batch.samples).toHaveLength(1);
    expect(report.batch.stats.dropped.aborted_rollouts).toBe(0);
  });

  it('/abort_requests on a non-stream call mid-generation', async () => {
    const report = await auditCase([
      async (a) => {
        const run = chatAgent(a.client, { model: SLOW, stream: false, question: question(a, 'Count.'), turns: 2 });
        const record = await generating(rig.twins.slow, a.rolloutId, (r) => r.tokensGenerated >= 5);
        await rig.post(rig.twins.slow, '/abort_requests', { request_ids: [record.responseId] });
        expect((await run)[0]?.finishReason).toBe('abort');
      },
    ]);
    expect(report.batch.stats.dropped.aborted_rollouts).toBe(1);
  });

  /** An agent that carries on from whatever the first answer was: two chat turns, or two completions. */
  const carryOn = (endpoint: 'chat' | 'completions', stream: boolean) => async (a: AttemptHandle) => {
    if (endpoint === 'chat') {
      const turns = await chatAgent(a.client, { model: SLOW, stream, question: question(a, 'Wait.'), turns: 2 });
      return turns[0]?.content;
    }
    const complete = async (prompt: string): Promise<string> => {
      const body = { model: SLOW, prompt, max_tokens: 100 };
      if (!stream) return (await a.client.completions.create(body)).choices[0]?.text ?? '';
      let text = '';
      for await (const chunk of await a.client.completions.create({ ...body, stream: true })) {
        text += chunk.choices[0]?.text ?? '';
      }
      return text;
    };
    const first = await complete(question(a, 'Once upon a time'));
    await complete(`${question(a, 'Once upon a time')}${first} and then`);
    return first;
  };

  it.each([
    ['chat', true],
    ['chat', false],
    ['completions', true],
    ['completions', false],
  ] as const)(
    'an abort before the first token (%s, stream=%s): the empty answer is an abort',
    async (endpoint, stream) => {
      const report = await auditCase([
        async (a) => {
          // A frozen engine: the request is admitted but waits, as requests queue in a busy vLLM.
          await rig.post(rig.twins.slow, '/pause?mode=keep');
          const run = carryOn(endpoint, stream)(a);
          await generating(rig.twins.slow, a.rolloutId, (r) => r.responseId !== undefined);
          await rig.post(rig.twins.slow, '/abort_requests', {});
          await rig.post(rig.twins.slow, '/resume');
          expect(await run).toBe('');
        },
      ]);
      expect(report.batch.samples).toEqual([]);
      expect(report.batch.stats.dropped.aborted_rollouts).toBe(1);
    },
  );
});

describe('ids lost on the wire', () => {
  it.each([false, true])(
    'a parser stream that skipped buffered chunks (legacy-tool-stream, think=%s)',
    async (think) => {
      const report = await auditCase([
        async (a) => {
          rig.twins.main.setFault('legacy-tool-stream', { times: 1 });
          await toolAgent(a.client, {
            model: POLICY,
            stream: true,
            question: question(a, 'Look up "zephyr".'),
            extra: { chat_template_kwargs: { enable_thinking: think } },
          });
        },
      ]);
      expect(report.batch.stats.dropped.token_count_mismatch).toBe(1);
      // The second call (after the tool result) is clean and trained on.
      expect(report.batch.samples).toHaveLength(1);
    },
  );

  it.each([
    ['prompt-only', false],
    ['prompt-only', true],
    ['omit', false],
    ['omit', true],
    ['null', false],
    ['null', true],
  ])('token-ids=%s (stream=%s)', async (mode, stream) => {
    const report = await auditCase([
      async (a) => {
        rig.twins.main.setFault(`token-ids=${mode}`, { times: 1 });
        await chatAgent(a.client, { model: POLICY, stream, question: question(a, 'Define "kite".'), turns: 2 });
      },
    ]);
    expect(report.batch.stats.dropped.incomplete_token_ids).toBe(1);
  });

  it.each([false, true])('include_reasoning: false with a thinking answer (stream=%s)', async (stream) => {
    const report = await auditCase([
      (a) =>
        chatAgent(a.client, {
          model: POLICY,
          stream,
          question: question(a, 'Think, then define "lyre".'),
          turns: 1,
          extra: { include_reasoning: false, chat_template_kwargs: { enable_thinking: true } },
        }),
    ]);
    // vLLM nulls the ids of every chunk of such a stream; a non-stream body keeps them (the think block included).
    expect(report.batch.stats.dropped.incomplete_token_ids).toBe(stream ? 1 : 0);
    expect(report.batch.samples).toHaveLength(stream ? 0 : 1);
  });
});

describe('logprobs', () => {
  it('-9999 (chat) and null (completions) placeholders: ids kept, logprobs left out and counted', async () => {
    const report = await auditCase([
      (a) => chatAgent(a.client, { model: FLOOR, stream: false, question: question(a, 'Define "oak".'), turns: 1 }),
      (a) => chatAgent(a.client, { model: FLOOR, stream: true, question: question(a, 'Define "elm".'), turns: 1 }),
      (a) => a.client.completions.create({ model: FLOOR, prompt: question(a, 'The ash tree is'), max_tokens: 12 }),
      async (a) => {
        const stream = await a.client.completions.create({
          model: FLOOR,
          prompt: question(a, 'The yew tree is'),
          max_tokens: 12,
          stream: true,
        });
        for await (const _ of stream) void _;
      },
    ]);
    expect(report.batch.stats.dropped.logprobs_floor).toBe(4);
    expect(report.batch.samples.map((s) => s.logprobs)).toEqual([null, null, null, null]);
  });

  it('raw logprobs under temperature 0.7 are no behaviour logprobs; processed ones are', async () => {
    const sampling = { temperature: 0.7, top_p: 0.9, seed: 7 };
    const report = await auditCase([
      (a) =>
        chatAgent(a.client, { model: RAW, stream: false, question: question(a, 'Hot.'), turns: 1, extra: sampling }),
      (a) =>
        chatAgent(a.client, { model: RAW, stream: true, question: question(a, 'Hot.'), turns: 1, extra: sampling }),
      (a) => chatAgent(a.client, { model: RAW, stream: false, question: question(a, 'Neutral.'), turns: 1 }),
      (a) =>
        chatAgent(a.client, { model: POLICY, stream: true, question: question(a, 'Hot.'), turns: 1, extra: sampling }),
    ]);
    // The batch nulls the raw pool's adjusted logprobs; the export and triplets carry them as declared (raw).
    expect(report.batch.stats.dropped.raw_logprobs).toBe(2);
    expect(report.batch.samples.map((s) => s.logprobs === null)).toEqual([true, true, false, false]);
  });
});

describe('generation shapes', () => {
  it.each([false, true])(
    'stop strings: the ids keep the stop string tokens, as vLLM sends them (stream=%s)',
    async (stream) => {
      const report = await auditCase([
        (a) =>
          chatAgent(a.client, {
            model: POLICY,
            stream,
            question: question(a, 'Stop.'),
            turns: 2,
            extra: { stop: [':'] },
          }),
        (a) =>
          chatAgent(a.client, {
            model: POLICY,
            stream,
            question: question(a, 'Stop here.'),
            turns: 1,
            extra: { stop: [':'], include_stop_str_in_output: true },
          }),
      ]);
      const entries = rig.twins.main.ledger.entries.filter((e) => e.stopReason === ':');
      expect(entries.length).toBeGreaterThanOrEqual(3);
      expect(report.batch.samples.length).toBeGreaterThanOrEqual(2);
    },
  );

  it.each([false, true])(
    'several prompts in one completions call: choice 0 with its own prompt (stream=%s)',
    async (stream) => {
      const report = await auditCase([
        async (a) => {
          const body = {
            model: POLICY,
            prompt: [question(a, 'First prompt'), 'A second, longer prompt'],
            max_tokens: 8,
            n: 2,
          };
          if (!stream) {
            await a.client.completions.create(body);
            return;
          }
          for await (const _ of await a.client.completions.create({ ...body, stream: true })) void _;
        },
        async (a) => {
          const ids = [
            [9707, 1879, 13],
            [785, 4226, 5562, 374],
          ];
          await a.client.completions.create({ model: POLICY, prompt: ids, max_tokens: 6, user: a.rolloutId });
        },
      ]);
      expect(report.batch.samples).toHaveLength(2);
    },
  );
});
