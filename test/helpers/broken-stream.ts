// Iterates an SDK stream that must break: it has to yield at least one event and then throw APIError, the way
// openai-node surfaces a stream the gateway reported as failed (never a clean-looking early end).
import { APIError } from 'openai';
import { expect } from 'vitest';

export async function expectApiErrorAfterEvents(stream: unknown): Promise<void> {
  let received = 0;
  const consume = async () => {
    for await (const _ of stream as AsyncIterable<unknown>) received++;
  };
  await expect(consume()).rejects.toBeInstanceOf(APIError);
  expect(received).toBeGreaterThan(0);
}
