// Token-faithful history (docs/trajectories.md) against the engine twin in qwen3 mode: the real Qwen3 template drops
// earlier <think> blocks and re-renders whitespace around tool calls, so as sent, every turn of a tool-using agent
// starts a new training row. With `history.mode: "faithful"` the gateway splices the served ids back and generates
// from token ids: the rollout is one row whose every generated token is one the engine served (the twin's ledger
// says so), and the agent's answers are the ones the chat route gives for the same tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { runToolAgent } from '../../helpers/tool-agent.js';
import { rolloutId } from '../gateway/harness.js';
import { AS_SENT, FAITHFUL, type HistoryHarness, historySpans, startHistoryHarness } from './harness.js';

let h: HistoryHarness;
beforeAll(async () => {
  h = await startHistoryHarness();
});
afterAll(async () => {
  await h?.close();
});

describe.each([false, true])('stream=%s', (stream) => {
  describe.each(['message', 'rebuild'] as const)('an agent that keeps its turns as %s', (history) => {
    it('is one training row of the ids the engine served, with the chat answers of as-sent', async () => {
      const task = `Task ${stream ? 's' : 'n'}-${history}: how do tides work?`;
      const ridAsSent = rolloutId('as-sent');
      const ridFaithful = rolloutId('faithful');
      const asSent = await runToolAgent({ client: h.client(ridAsSent), model: AS_SENT, stream, history, task });
      const faithful = await runToolAgent({ client: h.client(ridFaithful), model: FAITHFUL, stream, history, task });
      expect(asSent.turns).toHaveLength(8);

      // As sent, the template breaks the rollout apart; faithful, it stays one row.
      expect((await h.rows(ridAsSent)).length).toBeGreaterThan(1);
      const rows = await h.rows(ridFaithful);
      expect(rows).toHaveLength(1);
      const row = rows[0]!;

      // Every call was generated from token ids, and the row holds exactly what the engine was given and generated.
      const triplets = await h.triplets(ridFaithful);
      expect(triplets).toHaveLength(8);
      const context = [...row.promptIds, ...row.responseIds];
      let generated = 0;
      for (const t of triplets) {
        const entries = h.twin.ledger.byResponseId(t.metadata.response_id ?? '');
        expect(entries).toHaveLength(1);
        const entry = entries[0]!;
        expect(entry.endpoint).toBe('completions');
        expect(t.prompt.token_ids).toEqual(entry.promptIds);
        expect(t.response.token_ids).toEqual(entry.tokenIds);
        const end = entry.promptIds.length + entry.tokenIds.length;
        expect(context.slice(0, end)).toEqual([...entry.promptIds, ...entry.tokenIds]);
        const start = entry.promptIds.length - row.promptIds.length;
        expect(row.responseMask.slice(start, start + entry.tokenIds.length).every((m) => m === 1)).toBe(true);
        generated += entry.tokenIds.length;
      }
      expect(row.responseMask.filter((m) => m === 1)).toHaveLength(generated);

      // The agent saw the same answers (content, reasoning, tool calls, finish reasons) either way.
      expect(faithful.turns).toEqual(asSent.turns);

      // Each call's span says what happened: the first is the segment's start, every later one healed.
      const spans = historySpans(await h.spans(ridFaithful));
      expect(spans.map((s) => s.attributes[A.ATTR_HISTORY_STATUS])).toEqual([
        'linear',
        ...Array.from({ length: 7 }, () => 'healed'),
      ]);
      expect(spans.every((s) => s.attributes[A.ATTR_HISTORY_SEGMENT] === 0)).toBe(true);
      expect(spans.map((s) => s.attributes[A.ATTR_HISTORY_HEALED_TURNS])).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(spans.every((s) => String(s.attributes[A.ATTR_UPSTREAM_URL]).endsWith('/v1/completions'))).toBe(true);
    });
  });
});

describe('with thinking turned off in the template', () => {
  it('keeps the empty think block the engine was given, and the rollout one row', async () => {
    const extraBody = { chat_template_kwargs: { enable_thinking: false } };
    const task = 'No thinking: what is a tide?';
    const base = { stream: false, history: 'rebuild' as const, task, extraBody };
    const asSent = await runToolAgent({ ...base, client: h.client(rolloutId('off-as-sent')), model: AS_SENT });
    const rid = rolloutId('off-faithful');
    const faithful = await runToolAgent({ ...base, client: h.client(rid), model: FAITHFUL });
    expect(faithful.turns).toEqual(asSent.turns);
    expect(faithful.turns.every((t) => t.reasoning === null)).toBe(true);
    expect(await h.rows(rid)).toHaveLength(1);
    const triplets = await h.triplets(rid);
    expect(h.twin.ledger.byResponseId(triplets[1]?.metadata.response_id ?? '')[0]?.endpoint).toBe('completions');
  });
});

describe('the agent-visible answer of a faithful call', () => {
  const tools = [{ type: 'function', function: { name: 'search', parameters: { type: 'object' } } }];
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Where is the harbour?' },
  ];
  const normalise = (value: unknown): unknown =>
    JSON.parse(JSON.stringify(value).replace(/chatcmpl-tool-[0-9a-f]+/g, 'ID'));

  it("is the chat route's message, logprobs included, when not streamed", async () => {
    const body = { messages, tools, logprobs: true, top_logprobs: 2 };
    const asSent = await h.client(rolloutId('m-as-sent')).chat.completions.create({ model: AS_SENT, ...body } as never);
    const faithful = await h
      .client(rolloutId('m-faithful'))
      .chat.completions.create({ model: FAITHFUL, ...body } as never);
    const a = asSent as unknown as Record<string, any>;
    const f = faithful as unknown as Record<string, any>;
    // Generated from token ids, answered as the chat route answers.
    expect(h.twin.ledger.byResponseId(f.id)[0]?.endpoint).toBe('completions');
    expect(f.object).toBe('chat.completion');
    expect(normalise(f.choices[0].message)).toEqual(normalise(a.choices[0].message));
    expect(f.choices[0].finish_reason).toBe('tool_calls');
    expect(f.choices[0].finish_reason).toBe(a.choices[0].finish_reason);
    // The first call's prompt is the same either way, so the twin computes the same logprobs.
    expect(f.choices[0].logprobs.content.map((e: any) => [e.token, e.logprob])).toEqual(
      a.choices[0].logprobs.content.map((e: any) => [e.token, e.logprob]),
    );
    // Injected ids stay out of the agent's view, as for any chat call.
    expect(f.prompt_token_ids ?? null).toBeNull();
    expect(f.choices[0].token_ids ?? null).toBeNull();
  });

  it("is the chat route's stream chunk for chunk when streamed", async () => {
    const body = { messages, tools, stream: true, stream_options: { include_usage: true } };
    const collect = async (model: string) => {
      const events = (await h
        .client(rolloutId('c'))
        .chat.completions.create({ model, ...body } as never)) as unknown as AsyncIterable<Record<string, any>>;
      const out: unknown[] = [];
      let id = '';
      for await (const e of events) {
        id ||= String(e.id);
        expect(e.object).toBe('chat.completion.chunk');
        out.push(normalise({ choices: e.choices, usage: e.usage ?? null }));
      }
      return { id, chunks: out };
    };
    const asSent = await collect(AS_SENT);
    const faithful = await collect(FAITHFUL);
    expect(h.twin.ledger.byResponseId(faithful.id)[0]?.endpoint).toBe('completions');
    expect(faithful.chunks.length).toBeGreaterThan(10);
    expect(faithful.chunks).toEqual(asSent.chunks);
  });
});

describe('metrics', () => {
  it('counts faithful calls per model and status, and the turns healed', async () => {
    await runToolAgent({
      client: h.client(rolloutId('metrics')),
      model: FAITHFUL,
      stream: false,
      history: 'rebuild',
      task: 'm',
    });
    const text = await (await fetch(`${h.gw.url}/metrics`)).text();
    const value = (prefix: string) =>
      Number(
        text
          .split('\n')
          .find((line) => line.startsWith(prefix))
          ?.split(' ')
          .pop() ?? Number.NaN,
      );
    expect(value(`rollgate_history_calls_total{model="${FAITHFUL}",status="healed",reason=""}`)).toBeGreaterThanOrEqual(
      7,
    );
    expect(value(`rollgate_history_calls_total{model="${FAITHFUL}",status="linear",reason=""}`)).toBeGreaterThanOrEqual(
      1,
    );
    expect(value(`rollgate_history_healed_turns_total{model="${FAITHFUL}"}`)).toBeGreaterThanOrEqual(28);
    expect(text).not.toContain(`rollgate_history_calls_total{model="${AS_SENT}"`);
  });
});
