// Every proxied call is tagged as the agent loop's (`rollgate.call.role = main`) or as the harness's housekeeping
// (`auxiliary`), from the request as the harnesses send it, and the training rows leave the housekeeping out:
// Claude Code's own label (x-claude-code-request-class, with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1), its one-token
// quota and key probes, its session-title helper, and opencode's title call on the chat route; any agent's own
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
