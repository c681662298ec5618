// Every proxied call is tagged as the agent loop's (`rollgate.call.role = main`) or as the harness's housekeeping
// (`auxiliary`), from the request as the harnesses send it, and the training rows leave the housekeeping out:
// Claude Code's own label (x-claude-code-request-class, with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1), its one-token
// quota and key probes, its session-title helper and compaction, the titles, compaction and summaries of opencode,
// Codex and pi, and calls of another thread than the rollout attempt's main one; any agent's own
// `x-rollgate-call-role` over all of them, and a pool's `callRoles` rules between the headers and the built-in
// rules. The agents are the official SDKs over real sockets.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import type { TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
let agents: AnthropicAgents;
beforeAll(async () => {
  h = await startHarness();
  agents = anthropicAgents(h.gw.url);
});
afterAll(async () => {
  await agents?.close();
  await h?.close();
});

const CLAUDE_TITLE_PROMPT =
  'You are naming a coding session so the user can pick it out of a long list of sessions. The title is a name.';
const OPENCODE_TITLE_PROMPT = 'You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>';
const bash = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: { type: 'object' as const, properties: { command: { type: 'string' } } },
};

function roles(spans: Awaited<ReturnType<Harness['spans']>>): Array<[unknown, unknown]> {
  return spans
    .sort((a, b) => a.sequence_id - b.sequence_id)
    .map((s) => [s.attributes[A.ATTR_CALL_ROLE], s.attributes[A.ATTR_CALL_ROLE_SOURCE]]);
}

describe('call roles', () => {
  it("Claude Code's calls: the labelled loop, a labelled helper, probes and the title helper", async () => {
    const rid = rolloutId('role');
    const client = agents.client(rid);
    const user = [{ role: 'user' as const, content: 'Fix the test' }];
    await client.messages.create(
      { model: 'mock-model', max_tokens: 32, messages: user, tools: [bash] },
      { headers: { 'x-claude-code-request-class': 'main' } },
    );
    await client.messages.create(
      { model: 'mock-model', max_tokens: 32, messages: user },
      { headers: { 'x-claude-code-request-class': 'auxiliary' } },
    );
    await client.messages.create({
      model: 'mock-model',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'quota' }],
    });
    await client.messages.create({ model: 'mock-model', max_tokens: 32, system: CLAUDE_TITLE_PROMPT, messages: user });
    // The same prompt with tools offered is an agent loop that happens to quote it.
    await client.messages.create({
      model: 'mock-model',
      max_tokens: 32,
      system: CLAUDE_TITLE_PROMPT,
      messages: user,
      tools: [bash],
    });
    // An unlabelled ordinary call, and a one-token answer to a task (not a probe).
    await client.messages.create({ model: 'mock-model', max_tokens: 32, messages: user });
    await client.messages.create({
      model: 'mock-model',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'A or B?' }],
    });
    const spans = await h.spans(rid);
    expect(roles(spans)).toEqual([
      ['main', 'header'],
      ['auxiliary', 'header'],
      ['auxiliary', 'probe'],
      ['auxiliary', 'prompt'],
      ['main', 'default'],
      ['main', 'default'],
      ['main', 'default'],
    ]);
    const drops: TrainingDrop[] = [];
    const rows = spansToTrajectories(spans, { level: 'transition', onDropped: (d) => drops.push(d) });
    expect(drops).toEqual([
      { sequenceId: 2, reason: 'auxiliary' },
      { sequenceId: 3, reason: 'auxiliary' },
      { sequenceId: 4, reason: 'auxiliary' },
    ]);
    expect(rows.flatMap((r) => r.sequenceIds)).toEqual([1, 5, 6, 7]);
  });

  it("opencode's title call on the chat route is auxiliary, its turn is main", async () => {
    const rid = rolloutId('role');
    const client = h.client(rid);
    await client.chat.completions.create({
      model: 'mock-model',
      max_tokens: 16,
      messages: [
        { role: 'system', content: OPENCODE_TITLE_PROMPT },
        { role: 'user', content: 'Generate a title for this conversation:\n' },
        { role: 'user', content: '"Run echo ok"' },
      ],
    });
    await client.chat.completions.create({
      model: 'mock-model',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Run echo ok' }],
      tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: {} } } }],
    });
    expect(roles(await h.spans(rid))).toEqual([
      ['auxiliary', 'prompt'],
      ['main', 'default'],
    ]);
  });
});

describe('x-rollgate-call-role', () => {
  const tool = {
    type: 'function' as const,
    function: { name: 'bash', parameters: { type: 'object', properties: {} } },
  };

  it("overrides every other rule, Claude Code's own label included", async () => {
    const rid = rolloutId('role');
    const client = h.client(rid);
    // An agent loop's call (tools offered) the agent says is housekeeping; the value is read case-insensitively.
    await client.chat.completions.create(
      { model: 'mock-model', max_tokens: 16, messages: [{ role: 'user', content: 'Run echo ok' }], tools: [tool] },
      { headers: { 'x-rollgate-call-role': ' Auxiliary ' } },
    );
    // What looks like a quota probe, which the agent says is its task.
    await client.chat.completions.create(
      { model: 'mock-model', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] },
      { headers: { 'x-rollgate-call-role': 'main' } },
    );
    await agents
      .client(rid)
      .messages.create(
        { model: 'mock-model', max_tokens: 32, messages: [{ role: 'user', content: 'Fix the test' }] },
        { headers: { 'x-claude-code-request-class': 'compaction', 'x-rollgate-call-role': 'main' } },
      );
    expect(roles(await h.spans(rid))).toEqual([
      ['auxiliary', 'header'],
      ['main', 'header'],
      ['main', 'header'],
    ]);
  });

  it('refuses any other value with an OpenAI-shaped 400, forwarding nothing', async () => {
    const rid = rolloutId('role');
    const before = h.mock.requests.length;
    const error = await h
      .client(rid)
      .chat.completions.create(
        { model: 'mock-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-rollgate-call-role': 'auxilary' } },
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'x-rollgate-call-role' });
    expect(h.mock.requests.length).toBe(before);
    expect(await h.spans(rid)).toEqual([]);
  });
});

describe("a pool's callRoles rules", () => {
  let ruled: Harness;
  beforeAll(async () => {
    ruled = await startHarness(
      {},
      {},
      {
        callRoles: {
          auxiliary: [
            { systemPromptStartsWith: 'Summarize the conversation', noTools: true },
            { systemPromptIncludes: 'commit message', maxTokensAtMost: 8 },
          ],
          // This pool's task is titling: opencode's title prompt is the policy acting here.
          main: [{ systemPromptIncludes: 'You are a title generator' }],
        },
      },
    );
  });
  afterAll(async () => {
    await ruled?.close();
  });

  it('match after the headers and before the built-in rules, every condition of a rule holding', async () => {
    const rid = rolloutId('role');
    const client = ruled.client(rid);
    const tool = {
      type: 'function' as const,
      function: { name: 'bash', parameters: { type: 'object', properties: {} } },
    };
    const summary = { role: 'system' as const, content: 'Summarize the conversation so far in one paragraph.' };
    const commit = { role: 'system' as const, content: 'Write a one-line commit message for the diff.' };
    const user = { role: 'user' as const, content: 'diff --git a/x b/x' };
    await client.chat.completions.create({ model: 'mock-model', max_tokens: 64, messages: [summary, user] });
    await client.chat.completions.create({
      model: 'mock-model',
      max_tokens: 64,
      messages: [summary, user],
      tools: [tool],
    });
    await client.chat.completions.create({ model: 'mock-model', max_tokens: 8, messages: [commit, user] });
    await client.chat.completions.create({ model: 'mock-model', max_tokens: 64, messages: [commit, user] });
    await client.chat.completions.create({
      model: 'mock-model',
      max_tokens: 16,
      messages: [{ role: 'system', content: OPENCODE_TITLE_PROMPT }, user],
    });
    await client.chat.completions.create(
      { model: 'mock-model', max_tokens: 64, messages: [summary, user] },
      { headers: { 'x-rollgate-call-role': 'main' } },
    );
    // No rule matches: the built-in probe rule still applies.
    await client.chat.completions.create({
      model: 'mock-model',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'quota' }],
    });
    expect(roles(await ruled.spans(rid))).toEqual([
      ['auxiliary', 'config'],
      ['main', 'default'],
      ['auxiliary', 'config'],
      // No rule of the pool matches: the generic rule finds another system prompt and tool set than the main
      // thread's (the first call that offered tools, the second call).
      ['auxiliary', 'thread'],
      ['main', 'config'],
      ['main', 'header'],
      ['auxiliary', 'probe'],
    ]);
  });
});

// The harnesses' own housekeeping prompts, as they send them (src/gateway/capture/call-role-prompts.ts).
const OPENCODE_COMPACTION =
  'You are a context summarization agent. You are given a conversation between a user and an agent.';
const OPENCODE_SUMMARY = 'Summarize what was done in this conversation. Write like a pull request description.';
const PI_COMPACTION =
  'You are a context summarization assistant. Your task is to read a conversation between a user and an AI ' +
  'coding assistant, then produce a structured summary following the exact format specified.';
const CODEX_COMPACTION =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume ' +
  'the task.';
const CODEX_TITLE = 'Generate a concise, single-line task title of at most 36 characters and under five words.';
const CLAUDE_COMPACTION_SYSTEM = 'You are a helpful AI assistant tasked with summarizing conversations.';
const CLAUDE_SUBAGENT =
  "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's message, use the tools.";

describe('housekeeping of every harness, and other threads', () => {
  const chatTool = (name: string) => ({
    type: 'function' as const,
    function: { name, parameters: { type: 'object', properties: {} } },
  });
  const loopSystem = { role: 'system' as const, content: 'You are the coding agent. Use the tools.' };
  const user = { role: 'user' as const, content: 'Fix the failing test' };

  it('titles, compaction and summaries of opencode, Codex, pi and Claude Code are auxiliary, and out of the rows', async () => {
    const rid = rolloutId('role');
    const client = h.client(rid);
    const send = (messages: OpenAI.Chat.ChatCompletionMessageParam[], tools = true) =>
      client.chat.completions.create({
        model: 'mock-model',
        max_tokens: 16,
        messages,
        ...(tools ? { tools: [chatTool('bash'), chatTool('edit')] } : {}),
      });
    await send([loopSystem, user]);
    await send([{ role: 'system', content: OPENCODE_COMPACTION }, user], false);
    await send([{ role: 'system', content: OPENCODE_SUMMARY }, user], false);
    await send(
      [
        { role: 'system', content: PI_COMPACTION },
        { role: 'user', content: `<conversation>x</conversation>` },
      ],
      false,
    );
    // Codex and Claude Code compact with the loop's own system prompt and tools; the instruction comes last.
    await send([
      loopSystem,
      user,
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: CODEX_COMPACTION },
    ]);
    await send([{ role: 'system', content: CLAUDE_COMPACTION_SYSTEM }, user]);
    await send([{ role: 'user', content: `${CODEX_TITLE}\n\nFix the failing test` }], false);
    // A task that merely mentions a summary is the loop.
    await send([
      loopSystem,
      user,
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Now summarize.' },
    ]);
    const spans = await h.spans(rid);
    expect(roles(spans)).toEqual([
      ['main', 'default'],
      ['auxiliary', 'prompt'],
      ['auxiliary', 'prompt'],
      ['auxiliary', 'prompt'],
      ['auxiliary', 'prompt'],
      ['auxiliary', 'prompt'],
      ['auxiliary', 'prompt'],
      ['main', 'default'],
    ]);
    const drops: TrainingDrop[] = [];
    const rows = spansToTrajectories(spans, { level: 'transition', onDropped: (d) => drops.push(d) });
    expect(drops.map((d) => [d.sequenceId, d.reason])).toEqual([2, 3, 4, 5, 6, 7].map((n) => [n, 'auxiliary']));
    expect(rows.flatMap((r) => r.sequenceIds)).toEqual([1, 8]);
  });

  it("a call with another system prompt and tool set than the attempt's main thread is auxiliary", async () => {
    const rid = rolloutId('role');
    const client = h.client(rid);
    const send = (system: string, tools: string[]) =>
      client.chat.completions.create({
        model: 'mock-model',
        max_tokens: 16,
        messages: [{ role: 'system', content: system }, user],
        ...(tools.length > 0 ? { tools: tools.map(chatTool) } : {}),
      });
    // Before any call with tools the attempt has no main thread: a tool-less call is main.
    await send('Answer briefly.', []);
    await send('You are the coding agent. Use the tools.', ['bash', 'edit']);
    await send('Answer briefly.', []);
    await send('Classify the request.', ['label']);
    // The same tools in another order, or the same system prompt with other tools: the main thread.
    await send('A reworded prompt of the loop.', ['edit', 'bash']);
    await send('You are the coding agent. Use the tools.', ['bash']);
    // Claude Code's subagents have their own prompt and tools, and are the policy acting on the task.
    await send(CLAUDE_SUBAGENT, ['read', 'grep']);
    // A completions prompt has no system prompt to compare: the rule does not judge it.
    await client.completions.create({ model: 'mock-model', max_tokens: 16, prompt: 'Fix the failing test' });
    expect(roles(await h.spans(rid))).toEqual([
      ['main', 'default'],
      ['main', 'default'],
      ['auxiliary', 'thread'],
      ['auxiliary', 'thread'],
      ['main', 'default'],
      ['main', 'default'],
      ['main', 'prompt'],
      ['main', 'default'],
    ]);
    // Each rollout attempt has its own main thread: there, the classifier's shape is the first with tools.
    const other = rolloutId('role');
    await h.client(other).chat.completions.create({
      model: 'mock-model',
      max_tokens: 16,
      messages: [{ role: 'system', content: 'Classify the request.' }, user],
      tools: [chatTool('label')],
    });
    expect(roles(await h.spans(other))).toEqual([['main', 'default']]);
  });

  it("after a restart the attempt's next call with tools is its main thread again", async () => {
    const rid = rolloutId('role');
    const loop = (client: OpenAI) =>
      client.chat.completions.create({ model: 'mock-model', messages: [loopSystem, user], tools: [chatTool('bash')] });
    const classify = (client: OpenAI) =>
      client.chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'system', content: 'Classify the request.' }, user],
        tools: [chatTool('label')],
      });
    const before = await startHarness();
    try {
      await loop(before.client(rid));
      await classify(before.client(rid));
      expect(roles(await before.spans(rid))).toEqual([
        ['main', 'default'],
        ['auxiliary', 'thread'],
      ]);
    } finally {
      await before.close();
    }
    // A new gateway process knows nothing of the attempt: the loop's next turn is its main thread again.
    const after = await startHarness();
    try {
      await loop(after.client(rid));
      await classify(after.client(rid));
      expect(roles(await after.spans(rid))).toEqual([
        ['main', 'default'],
        ['auxiliary', 'thread'],
      ]);
    } finally {
      await after.close();
    }
  });

  it('a pool with callRoles.byThread false keeps other threads main', async () => {
    const own = await startHarness({}, {}, { callRoles: { byThread: false } });
    try {
      const rid = rolloutId('role');
      const client = own.client(rid);
      await client.chat.completions.create({
        model: 'mock-model',
        messages: [loopSystem, user],
        tools: [chatTool('bash')],
      });
      await client.chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'system', content: 'Other.' }, user],
      });
      expect(roles(await own.spans(rid))).toEqual([
        ['main', 'default'],
        ['main', 'default'],
      ]);
    } finally {
      await own.close();
    }
  });

  it("Claude Code's compaction on the Messages API, with the loop's tools, is auxiliary", async () => {
    const rid = rolloutId('role');
    const client = agents.client(rid);
    const messages = [{ role: 'user' as const, content: 'Fix the test' }];
    await client.messages.create({
      model: 'mock-model',
      max_tokens: 32,
      system: 'You are Claude Code.',
      messages,
      tools: [bash],
    });
    await client.messages.create({
      model: 'mock-model',
      max_tokens: 32,
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1' },
        { type: 'text', text: CLAUDE_COMPACTION_SYSTEM },
      ],
      messages,
      tools: [bash],
    });
    expect(roles(await h.spans(rid))).toEqual([
      ['main', 'default'],
      ['auxiliary', 'prompt'],
    ]);
  });
});
