// docs/failure-classes.md#9: nothing but OpenAI stream events reaches the agent. Raw bytes of streamed chat and completions
// calls (plain, with usage asked for, with n=2, and with upstream faults: an error event, garbage, a cut socket)
// split into events that are each a chunk of the endpoint's object type, an {"error": ...} event, a `:` comment
// or the final [DONE], and [DONE] comes last when it comes at all.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

async function rawStream(path: string, body: Record<string, unknown>): Promise<string> {
  const response = await fetch(`${gw.url}/rollout/ro-a09/attempt/a1/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-model', max_tokens: 8, stream: true, ...body }),
  });
  expect(response.status).toBe(200);
  let text = '';
  const decoder = new TextDecoder();
  try {
    for await (const bytes of response.body ?? []) text += decoder.decode(bytes as Uint8Array, { stream: true });
  } catch {
    // A cut upstream may end the body with an error after the last event; what arrived is what we check.
  }
  return text;
}

function checkEvents(raw: string, object: string): { chunks: number; errors: number; done: boolean } {
  const events = raw.split(/\r\n\r\n|\n\n|\r\r/).filter((e) => e.length > 0);
  let chunks = 0;
  let errors = 0;
  let done = false;
  for (const event of events) {
    expect(done, 'nothing after [DONE]').toBe(false);
    const lines = event.split(/\r\n|\n|\r/);
    if (lines.every((l) => l.startsWith(':'))) continue;
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart());
    expect(
      lines.filter((l) => !l.startsWith('data:') && !l.startsWith(':')),
      event,
    ).toEqual([]);
    const payload = data.join('\n');
    if (payload === '[DONE]') {
      done = true;
      continue;
    }
    const parsed = JSON.parse(payload) as { object?: unknown; choices?: unknown; error?: { message?: unknown } };
    if (parsed.error !== undefined) {
      expect(typeof parsed.error.message, payload).toBe('string');
      errors++;
      continue;
    }
    expect(parsed.object, payload).toBe(object);
    expect(Array.isArray(parsed.choices), payload).toBe(true);
    chunks++;
  }
  return { chunks, errors, done };
}

const messages = [{ role: 'user', content: 'hello' }];

it.each([
  ['chat', { messages }],
  ['chat with usage', { messages, stream_options: { include_usage: true } }],
  ['chat n=2', { messages, n: 2 }],
])('forwards only OpenAI events: %s', async (_label, body) => {
  const result = checkEvents(await rawStream('chat/completions', body), 'chat.completion.chunk');
  expect(result).toMatchObject({ errors: 0, done: true });
  expect(result.chunks).toBeGreaterThan(1);
});

it('forwards only OpenAI events: completions', async () => {
  const result = checkEvents(await rawStream('completions', { prompt: 'hello' }), 'text_completion');
  expect(result).toMatchObject({ errors: 0, done: true });
  expect(result.chunks).toBeGreaterThan(1);
});

it.each(['error-event-after=2', 'garbage-after=2', 'close-after=2'])(
  'ends a faulty stream (%s) with an OpenAI error event and no [DONE]',
  async (fault) => {
    const result = checkEvents(
      await rawStream('chat/completions', { messages, mock_fault: fault }),
      'chat.completion.chunk',
    );
    expect(result.errors).toBe(1);
    expect(result.done).toBe(false);
  },
);
