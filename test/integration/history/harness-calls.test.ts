// Faithful history under what real harnesses do: the openai SDK's stream helper keeps only the last reasoning delta
// of each answer, agents cut or drop reasoning, and opencode, Claude Code and Codex send titles and compaction calls
// beside their loop. The served ids replace every assistant turn, so reasoning the agent mangled is no edit; and an
// auxiliary call goes as sent, leaves the rollout's served ids alone, and stays out of the rows (counted).
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import type { TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
import { AGENT_TOOLS } from '../../helpers/tool-agent.js';
import { rolloutId } from '../gateway/harness.js';
import { FAITHFUL, type HistoryHarness, historySpans, startHistoryHarness } from './harness.js';

type Message = OpenAI.Chat.ChatCompletionMessageParam;
type Loose = Record<string, unknown>;

const SYSTEM: Message = {
  role: 'system',
  content: 'You are a research assistant. Use the search tool before answering.',
};
const OPENCODE_TITLE =
  'You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>\nGenerate a brief title';
const OPENCODE_COMPACTION =
  'You are a context summarization agent. You are given a conversation between a user and an agent.';
const CLAUDE_CODE_COMPACTION =
  "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's " +
  'explicit requests and your previous actions.';

let h: HistoryHarness;
beforeAll(async () => {
  h = await startHistoryHarness();
});
afterAll(async () => {
  await h?.close();
});

function attrs(spans: readonly Span[], key: string): unknown[] {
  return [...spans].sort((a, b) => a.sequence_id - b.sequence_id).map((s) => s.attributes[key]);
}

/** The tool results for an answer's calls, as the agent runs them. */
function toolResults(message: OpenAI.ChatCompletionMessage): Message[] {
  return (message.tool_calls ?? []).map((call) => ({
    role: 'tool' as const,
    tool_call_id: call.id,
    content: JSON.stringify({ hits: [`result for ${call.id}`] }),
  }));
}

/** One turn of the loop, non-streamed, with the answer as the agent keeps it. */
async function turn(client: OpenAI, messages: readonly Message[]): Promise<OpenAI.ChatCompletionMessage> {
  const res = await client.chat.completions.create({ model: FAITHFUL, messages: [...messages], tools: AGENT_TOOLS });
  const message = res.choices[0]?.message;
  if (message === undefined) throw new Error('no answer');
  return message;
}

describe('reasoning the client mangled', () => {
  it("the openai SDK's stream helper (last reasoning delta only): 6 streamed calls, one row, no fork", async () => {
    const rid = rolloutId('stream-helper');
    const client = h.client(rid);
    const messages: Message[] = [SYSTEM, { role: 'user', content: 'Where does the river rise?' }];
    const kept: string[] = [];
    for (let call = 0; call < 6; call++) {
      const stream = client.chat.completions.stream({ model: FAITHFUL, messages: [...messages], tools: AGENT_TOOLS });
      const message = (await stream.finalChatCompletion()).choices[0]?.message;
      if (message === undefined) throw new Error('no answer');
      kept.push(String((message as unknown as Loose).reasoning));
      // The agent re-sends the message the helper assembled, as harnesses built on it do.
      messages.push(message as Message, ...toolResults(message));
      if ((message.tool_calls ?? []).length === 0) messages.push({ role: 'user', content: 'And where does it end?' });
    }
    // The helper kept a fragment of each reasoning (the model's starts "Query n"), not what the model wrote.
    expect(kept.every((r) => r.length > 0 && !r.startsWith('Query'))).toBe(true);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => s.attributes[A.ATTR_HISTORY_STATUS])).toEqual([
      'linear',
      'healed',
      'healed',
      'healed',
      'healed',
      'healed',
    ]);
    const rows = await h.rows(rid);
    expect(rows.map((r) => r.sequenceIds)).toEqual([[1, 2, 3, 4, 5, 6]]);
  });

  it('cut, rewritten or dropped reasoning is no edit; changed visible content still forks', async () => {
    const rid = rolloutId('reasoning-cut');
    const client = h.client(rid);
    const messages: Message[] = [SYSTEM, { role: 'user', content: 'How old is the bridge?' }];
    const a1 = await turn(client, messages);
    const cut = { ...a1, reasoning: String((a1 as unknown as Loose).reasoning).slice(0, 9) } as Message;
    messages.push(cut, ...toolResults(a1));
    const a2 = await turn(client, messages);
    messages.push({ ...a2, reasoning: 'Something the model never thought.' } as Message, ...toolResults(a2));
    const a3 = await turn(client, messages);
    messages.push({ role: 'assistant', content: a3.content, tool_calls: a3.tool_calls } as Message, ...toolResults(a3));
    await turn(client, messages);
    const edited = messages.map((m, i) => (i === 2 ? { ...m, content: 'I will not search.' } : m)) as Message[];
    await turn(client, edited);
    const spans = historySpans(await h.spans(rid));
    expect(spans.map((s) => s.attributes[A.ATTR_HISTORY_STATUS])).toEqual([
      'linear',
      'healed',
      'healed',
      'healed',
      'forked',
    ]);
    expect(spans[4]?.attributes[A.ATTR_HISTORY_FORK_REASON]).toBe('assistant_edited');
  });
});

describe('auxiliary calls under faithful history', () => {
  it("opencode's title and compaction, Claude Code's compaction and another thread: as sent, out of the rows", async () => {
    const rid = rolloutId('aux');
    const client = h.client(rid);
    const user: Message = { role: 'user', content: 'Which bird sings at night?' };
    // opencode sends its title call before the first turn.
    await client.chat.completions.create({
      model: FAITHFUL,
      messages: [
        { role: 'system', content: OPENCODE_TITLE },
        { role: 'user', content: 'Generate a title for this conversation:\n"Which bird sings at night?"' },
      ],
    });
    const messages: Message[] = [SYSTEM, user];
    const a1 = await turn(client, messages);
    messages.push(a1, ...toolResults(a1));
    // opencode's compaction agent: its own system prompt over the conversation, no tools.
    await client.chat.completions.create({
      model: FAITHFUL,
      messages: [{ role: 'system', content: OPENCODE_COMPACTION }, ...messages.slice(1)],
    });
    // Claude Code compacts with the loop's own system prompt and tools, the instruction as the last user message:
    // it continues the served history, and spliced it would replace the conversation's segment.
    await turn(client, [...messages, { role: 'user', content: CLAUDE_CODE_COMPACTION }]);
    // Another thread: its own system prompt and tools (a classifier the harness runs beside its loop).
    await client.chat.completions.create({
      model: FAITHFUL,
      messages: [{ role: 'system', content: 'Classify the request.' }, user],
      tools: [{ type: 'function', function: { name: 'label', parameters: { type: 'object', properties: {} } } }],
    });
    const a2 = await turn(client, messages);
    messages.push(a2, ...toolResults(a2));
    await turn(client, messages);

    const spans = await h.spans(rid);
    expect(attrs(spans, A.ATTR_CALL_ROLE)).toEqual([
      'auxiliary',
      'main',
      'auxiliary',
      'auxiliary',
      'auxiliary',
      'main',
      'main',
    ]);
    expect(attrs(spans, A.ATTR_CALL_ROLE_SOURCE)).toEqual([
      'prompt',
      'default',
      'prompt',
      'prompt',
      'thread',
      'default',
      'default',
    ]);
    // The loop is one segment from its first call: the title before it is no fork, nothing between its turns is.
    expect(attrs(spans, A.ATTR_HISTORY_STATUS)).toEqual([
      'bypassed',
      'linear',
      'bypassed',
      'bypassed',
      'bypassed',
      'healed',
      'healed',
    ]);
    expect(attrs(spans, A.ATTR_HISTORY_BYPASS_REASON)).toEqual([
      'auxiliary',
      undefined,
      'auxiliary',
      'auxiliary',
      'auxiliary',
      undefined,
      undefined,
    ]);
    // The auxiliary calls went to the chat route as sent, the loop's to token-in generation.
    expect(attrs(spans, A.ATTR_UPSTREAM_URL).map((url) => String(url).replace(h.twin.url, ''))).toEqual([
      '/chat/completions',
      '/completions',
      '/chat/completions',
      '/chat/completions',
      '/chat/completions',
      '/completions',
      '/completions',
    ]);
    const drops: TrainingDrop[] = [];
    const rows = spansToTrajectories(spans, {
      maxPromptLength: 1 << 20,
      maxResponseLength: 1 << 20,
      onDropped: (d) => drops.push(d),
    });
    expect(rows.map((r) => r.sequenceIds)).toEqual([[2, 6, 7]]);
    expect(drops).toEqual([1, 3, 4, 5].map((sequenceId) => ({ sequenceId, reason: 'auxiliary' })));
  });
});
