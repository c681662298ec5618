// The span of a Messages API call is in the store before the agent sees the end of the answer (message_stop of a
// stream, the body of a JSON answer), as for chat's [DONE]: an agent that ends its rollout right after its last
// call must not race the recording. The store here takes its time writing spans, so an answer that went out early
// would be seen before its span.
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span, SpanInput } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

const SPAN_WRITE_MS = 300;

class SlowSpanStore extends MemoryStore {
  override async addSpan(span: SpanInput): Promise<Span | null> {
    await delay(SPAN_WRITE_MS);
    return super.addSpan(span);
  }
}

let mock: MockVllm;
let gw: TestGateway;
let agents: AnthropicAgents;
const store = new SlowSpanStore();
beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] }, { store });
  agents = anthropicAgents(gw.url);
});
afterAll(async () => {
  await agents?.close();
  await gw?.close();
  await mock?.close();
  await store.close();
});

it('stores the span, with its token ids, before message_stop reaches the SDK', async () => {
  const rid = rolloutId();
  const stream = await agents.client(rid).messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 100,
    stream: true,
    messages: [{ role: 'user', content: 'stream it' }],
  });
  let atStop: Span[] | null = null;
  for await (const event of stream) {
    if (event.type === 'message_stop') atStop = (await store.querySpans(rid)).items;
  }
  expect(atStop).toHaveLength(1);
  expect(atStop?.[0]?.sequence_id).toBe(1);
  expect(atStop?.[0]?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(expect.arrayContaining([expect.any(Number)]));
});

it('stores the span before a JSON answer arrives', async () => {
  const rid = rolloutId();
  await agents.client(rid).messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'no stream' }],
  });
  const spans = (await store.querySpans(rid)).items;
  expect(spans).toHaveLength(1);
  expect(spans[0]?.attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(expect.arrayContaining([expect.any(Number)]));
});
