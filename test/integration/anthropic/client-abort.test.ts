// An Anthropic SDK agent that stops reading a Messages stream cancels the engine's generation through the
// translating sink (its close and destroy reach the agent's socket), and the call is recorded as
// client_disconnected, as on the chat route.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { abortedUpstream, type Harness, rolloutId, spansOnceWritten, startHarness } from '../gateway/harness.js';

let h: Harness;
let agents: AnthropicAgents;
beforeAll(async () => {
  h = await startHarness({ interTokenMs: 50 });
  agents = anthropicAgents(h.gw.url);
});
afterAll(async () => {
  await agents?.close();
  await h?.close();
});

it('cancels the engine request when the agent leaves mid-stream and records client_disconnected', async () => {
  const rid = rolloutId();
  const stream = await agents.client(rid).messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 200,
    stream: true,
    messages: [{ role: 'user', content: 'tell me a long story' }],
  });
  let deltas = 0;
  for await (const event of stream) {
    if (event.type === 'content_block_delta' && ++deltas === 3) break;
  }
  const upstream = await abortedUpstream(h, rid);
  expect(upstream.completedAt).toBeUndefined();
  const spans = await spansOnceWritten(h, rid);
  expect(spans).toHaveLength(1);
  expect(spans[0]?.attributes[A.ATTR_STREAM_STATUS]).toBe('client_disconnected');
  expect(spans[0]?.attributes[A.ATTR_API]).toBe(A.API_VALUE_ANTHROPIC_MESSAGES);
});
