// Every proxied call is tagged as the agent loop's (`rollgate.call.role = main`) or as the harness's housekeeping
// (`auxiliary`), from the request as the harnesses send it, and the training rows leave the housekeeping out:
// Claude Code's own label (x-claude-code-request-class, with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1), its one-token
// quota and key probes, its session-title helper, and opencode's title call on the chat route. The agents are the
// official SDKs over real sockets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import type { TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/tracing/attributes.js';
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
