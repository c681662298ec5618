// Histories that do not continue what was served: faithful history never splices served ids into a history the
// agent changed. The call starts a new segment (reset), is refused (error) or goes to the chat route as sent
// (passthrough); what the agent may legitimately do to its own copy (drop reasoning, re-serialise arguments, retry)
// is no fork. Side calls interleaved with the main conversation get their own segment.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { AGENT_TOOLS } from '../../helpers/tool-agent.js';
import { rolloutId } from '../gateway/harness.js';
import { AS_SENT, FAITHFUL, type HistoryHarness, historySpans, startHistoryHarness } from './harness.js';

type Message = Record<string, unknown>;

const SYSTEM: Message = { role: 'system', content: 'Use the search tool before answering.' };

async function turn(
  client: OpenAI,
  messages: readonly Message[],
  extra: Record<string, unknown> = {},
): Promise<Message> {
  const res = (await client.chat.completions.create({
    model: FAITHFUL,
    messages,
    tools: AGENT_TOOLS,
    ...extra,
  } as never)) as unknown as { choices: { message: Message }[] };
  const message = res.choices[0]?.message ?? {};
  return { role: 'assistant', content: message.content ?? null, tool_calls: message.tool_calls };
}

function toolResult(message: Message, text: string): Message {
  const calls = message.tool_calls as { id: string }[];
  return { role: 'tool', tool_call_id: calls[0]?.id ?? '', content: text };
}

/** Two turns of the tool loop: [system, user, a1, tool1] ready for the third call, plus a1 itself. */
async function twoTurns(client: OpenAI, question: string): Promise<{ history: Message[]; a2: Message }> {
  const start = [SYSTEM, { role: 'user', content: question }];
  const a1 = await turn(client, start);
  const history = [...start, a1, toolResult(a1, 'first result')];
  const a2 = await turn(client, history);
  return { history: [...history, a2, toolResult(a2, 'second result')], a2 };
}

function attr(span: { attributes: Record<string, unknown> } | undefined, key: string): unknown {
  return span?.attributes[key];
}

describe('onMismatch: reset (the default)', () => {
  let h: HistoryHarness;
  beforeAll(async () => {
    h = await startHistoryHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('an edited earlier message starts a new segment from the request as the engine renders it', async () => {
    const rid = rolloutId('edited');
    const client = h.client(rid);
    const { history } = await twoTurns(client, 'How deep is the bay?');
    const edited = history.map((m, i) => (i === 1 ? { ...m, content: 'How wide is the bay?' } : m));
    const a3 = await turn(client, edited);
    await turn(client, [...edited, a3, toolResult(a3, 'third result')]);

    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_STATUS))).toEqual(['linear', 'healed', 'forked', 'healed']);
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_SEGMENT))).toEqual([0, 0, 1, 1]);
    expect(attr(spans[2], A.ATTR_HISTORY_FORK_REASON)).toBe('history_edited');
    expect(attr(spans[2], A.ATTR_HISTORY_ON_MISMATCH)).toBe('reset');

    // The forked call's prompt is the engine's own rendering of the request: nothing was spliced into it.
    const triplets = await h.triplets(rid);
    const rendered = await fetch(`${h.twin.baseUrl}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: h.twin.model, messages: edited, tools: AGENT_TOOLS }),
    });
    expect(triplets[2]?.prompt.token_ids).toEqual(((await rendered.json()) as { tokens: number[] }).tokens);
    // Two segments, two rows: the calls before the edit and the calls after it.
    expect((await h.rows(rid)).map((r) => r.sequenceIds.length)).toEqual([2, 2]);
    // The rollout carries the totals of its calls' statuses, and the gateway reports rates per model.
    expect((await h.gw.gateway.store.getRolloutById(rid))?.history).toEqual({
      linear: 1,
      healed: 2,
      forked: 1,
      bypassed: 0,
    });
    const stats = (await (await fetch(`${h.gw.url}/metrics/history`)).json()) as {
      models: Array<{ model: string; calls: number; forked: number; fork_rate: number; heal_rate: number }>;
    };
    const faithful = stats.models.find((m) => m.model === FAITHFUL);
    expect(faithful?.forked).toBeGreaterThanOrEqual(1);
    expect(faithful?.fork_rate).toBeCloseTo((faithful?.forked ?? 0) / (faithful?.calls ?? 1), 10);
    expect(faithful?.heal_rate).toBeGreaterThan(0);
    expect(stats.models.some((m) => m.model === AS_SENT)).toBe(false);
  });

  it('an assistant turn the agent rewrote is a fork, not a splice', async () => {
    const rid = rolloutId('assistant-edited');
    const client = h.client(rid);
    const { history } = await twoTurns(client, 'Who built the lighthouse?');
    const edited = history.map((m, i) => (i === 2 ? { ...m, content: 'I decided to search.' } : m));
    await turn(client, edited);
    const spans = historySpans(await h.spans(rid));
    expect(attr(spans[2], A.ATTR_HISTORY_STATUS)).toBe('forked');
    expect(attr(spans[2], A.ATTR_HISTORY_FORK_REASON)).toBe('assistant_edited');
  });

  it('dropped reasoning, re-serialised arguments and trimmed whitespace are no edits', async () => {
    const rid = rolloutId('reserialised');
    const client = h.client(rid);
    const { history } = await twoTurns(client, 'When does the ferry leave?');
    const rewritten = history.map((m) => {
      if (m.role !== 'assistant') return m;
      const calls = (m.tool_calls as { id: string; function: { name: string; arguments: string } }[]).map((c) => {
        const args = JSON.parse(c.function.arguments) as Record<string, unknown>;
        const reordered = Object.fromEntries(Object.entries(args).reverse());
        return { ...c, function: { ...c.function, arguments: JSON.stringify(reordered) } };
      });
      return {
        role: 'assistant',
        content: typeof m.content === 'string' ? m.content.trim() : m.content,
        tool_calls: calls,
      };
    });
    await turn(client, rewritten);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_STATUS))).toEqual(['linear', 'healed', 'healed']);
    expect(await h.rows(rid)).toHaveLength(1);
  });

  it('a retry of the last call is given the same prompt as the first try', async () => {
    const rid = rolloutId('retry');
    const client = h.client(rid);
    const start = [SYSTEM, { role: 'user', content: 'Is the museum open?' }];
    const a1 = await turn(client, start);
    const history = [...start, a1, toolResult(a1, 'open')];
    await turn(client, history);
    await turn(client, history);
    const triplets = await h.triplets(rid);
    expect(triplets).toHaveLength(3);
    expect(triplets[2]?.prompt.token_ids).toEqual(triplets[1]?.prompt.token_ids);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_SEGMENT))).toEqual([0, 0, 0]);
    expect(attr(spans[2], A.ATTR_HISTORY_STATUS)).toBe('healed');
  });

  it('a side call between two turns gets its own segment and the conversation continues its own', async () => {
    const rid = rolloutId('side-call');
    const client = h.client(rid);
    const start = [SYSTEM, { role: 'user', content: 'Plan a walk by the river.' }];
    const a1 = await turn(client, start);
    await turn(client, [{ role: 'user', content: 'Give this conversation a title.' }]);
    await turn(client, [...start, a1, toolResult(a1, 'a path')]);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_STATUS))).toEqual(['linear', 'forked', 'healed']);
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_SEGMENT))).toEqual([0, 1, 0]);
    // The conversation is one row across the side call; the side call is a row of its own.
    expect((await h.rows(rid)).map((r) => r.sequenceIds)).toEqual([[1, 3], [2]]);
  });

  it('a turn cut by max_tokens is closed by the template, and the rollout stays one row', async () => {
    const rid = rolloutId('cut');
    const client = h.client(rid);
    const start = [SYSTEM, { role: 'user', content: 'Describe the old town.' }];
    const res = (await client.chat.completions.create({
      model: FAITHFUL,
      messages: start,
      tools: AGENT_TOOLS,
      max_tokens: 6,
    } as never)) as unknown as { choices: { finish_reason: string; message: Message }[] };
    expect(res.choices[0]?.finish_reason).toBe('length');
    const cut = { role: 'assistant', content: res.choices[0]?.message.content ?? null };
    await turn(client, [...start, cut, { role: 'user', content: 'Go on.' }]);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_HISTORY_STATUS))).toEqual(['linear', 'healed']);
    const [row] = await h.rows(rid);
    const triplets = await h.triplets(rid);
    const served = triplets[0]?.response.token_ids ?? [];
    expect(served).toHaveLength(6);
    // The template's <|im_end|> closes the cut turn: the first token after it, as context (mask 0).
    expect(row?.responseIds[served.length]).toBe(151645);
    expect(row?.responseMask[served.length]).toBe(0);
  });

  it('an engine error mid-stream reaches the agent as an error event and nothing of it is kept', async () => {
    const rid = rolloutId('stream-error');
    const client = h.client(rid);
    const start = [SYSTEM, { role: 'user', content: 'Find the bakery.' }];
    const a1 = await turn(client, start);
    const history = [...start, a1, toolResult(a1, 'on the corner')];
    h.twin.setFault('error-event-after=4', { times: 1, paths: ['/v1/completions'] });
    const broken = async () => {
      const events = (await client.chat.completions.create({
        model: FAITHFUL,
        messages: history,
        tools: AGENT_TOOLS,
        stream: true,
      } as never)) as unknown as AsyncIterable<unknown>;
      for await (const _ of events) {
        // drained until the error event
      }
    };
    await expect(broken()).rejects.toThrow();
    await turn(client, history);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => attr(s, A.ATTR_STREAM_STATUS))).toEqual(['ok', 'stream_error', 'ok']);
    // The retry continues the segment as it was before the broken call: same prompt, one row without it.
    const triplets = await h.triplets(rid);
    expect(triplets.map((t) => t.metadata.sequence_id)).toEqual([1, 3]);
    expect((await h.rows(rid)).map((r) => r.sequenceIds)).toEqual([[1, 3]]);
  });

  it('a call token-in generation cannot serve goes to the chat route as sent', async () => {
    const rid = rolloutId('bypass');
    await turn(h.client(rid), [SYSTEM, { role: 'user', content: 'Two ideas, please.' }], { n: 2 });
    const [span] = historySpans(await h.spans(rid));
    expect(attr(span, A.ATTR_HISTORY_STATUS)).toBe('bypassed');
    expect(attr(span, A.ATTR_HISTORY_BYPASS_REASON)).toBe('n');
    expect(h.twin.ledger.last()?.endpoint).toBe('chat');
  });
});

describe('onMismatch: error', () => {
  let h: HistoryHarness;
  beforeAll(async () => {
    h = await startHistoryHarness({ history: { onMismatch: 'error' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses a history that does not continue what was served, with a 409 naming why', async () => {
    const rid = rolloutId('refused');
    const client = h.client(rid);
    const { history } = await twoTurns(client, 'Where is the station?');
    const generations = h.twin.ledger.entries.length;
    const edited = history.filter((_, i) => i !== 1);
    const error = await turn(client, edited).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.ConflictError);
    expect((error as Error).message).toContain('history_edited');
    expect(h.twin.ledger.entries.length).toBe(generations);
    const spans = historySpans(await h.spans(rid));
    expect(attr(spans[2], A.ATTR_HISTORY_STATUS)).toBe('forked');
    expect(attr(spans[2], A.ATTR_HISTORY_ON_MISMATCH)).toBe('error');
  });
});

describe('onMismatch: passthrough', () => {
  let h: HistoryHarness;
  beforeAll(async () => {
    h = await startHistoryHarness({ history: { onMismatch: 'passthrough' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('forwards a history that does not continue what was served to the chat route as sent', async () => {
    const rid = rolloutId('passthrough');
    const client = h.client(rid);
    const { history } = await twoTurns(client, 'Is there a market today?');
    const edited = history.map((m, i) => (i === 1 ? { ...m, content: 'Is there a fair today?' } : m));
    const answer = await turn(client, edited);
    expect(answer.tool_calls ?? answer.content).toBeTruthy();
    expect(h.twin.ledger.last()?.endpoint).toBe('chat');
    const spans = historySpans(await h.spans(rid));
    expect(attr(spans[2], A.ATTR_HISTORY_STATUS)).toBe('forked');
    expect(attr(spans[2], A.ATTR_HISTORY_ON_MISMATCH)).toBe('passthrough');
  });
});
