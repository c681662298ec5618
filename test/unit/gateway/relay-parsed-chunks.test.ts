// A translated stream (Messages, Responses via chat) is split and parsed once, by the relay: the translating sink
// gets the relay's parsed chunk instead of the event's bytes to split and parse again.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';
import type { AgentSink } from '../../../src/gateway/stream/agent-sink.js';
import { StreamRelay } from '../../../src/gateway/stream/stream-relay.js';
import { type StreamTranslation, TranslatingSink } from '../../../src/gateway/stream/translating-sink.js';

const CHUNKS = [
  { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
  { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' } }], usage: null },
  { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
];

function sse(chunks: readonly object[]): string {
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`;
}

/** Relays `input` through a TranslatingSink whose translation records every chunk it is given. */
function relayTranslated(input: string, readSize: number): { seen: unknown[]; out: string; done: boolean } {
  const seen: unknown[] = [];
  const written: Buffer[] = [];
  const agent: AgentSink = {
    headersSent: false,
    writeHead: () => undefined,
    write(chunk: Uint8Array) {
      written.push(Buffer.from(chunk));
      return true;
    },
    end(chunk?: Uint8Array) {
      if (chunk !== undefined) written.push(Buffer.from(chunk));
    },
    on: () => undefined,
    once: () => undefined,
    removeListener: () => undefined,
    destroy: () => undefined,
  };
  const translation: StreamTranslation = {
    chunk(chunk) {
      seen.push(chunk);
      return `event: t\ndata: ${seen.length}\n\n`;
    },
    finish: () => 'event: end\ndata: {}\n\n',
    fail: () => 'event: failed\ndata: {}\n\n',
  };
  const sink = new TranslatingSink({ agent, stream: () => translation, whole: (answer) => answer });
  sink.writeHead(200, { 'content-type': 'text/event-stream' });
  let done = false;
  const relay = new StreamRelay({
    sink,
    capture: new CallCapture('chat'),
    clientAskedUsage: false,
    strip: null,
    hooks: {
      onFirstEvent: () => undefined,
      onDone: (event) => {
        done = true;
        sink.end(event);
      },
      onStreamError: () => undefined,
    },
  });
  const bytes = Buffer.from(input);
  for (let i = 0; i < bytes.length; i += readSize) relay.push(bytes.subarray(i, i + readSize));
  relay.end();
  return { seen, out: Buffer.concat(written).toString(), done };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a translated stream', () => {
  it.each([1, 7, 4096])('parses each event once (reads of %i bytes)', (readSize) => {
    const parse = vi.spyOn(JSON, 'parse');
    const run = relayTranslated(sse(CHUNKS), readSize);
    expect(parse).toHaveBeenCalledTimes(CHUNKS.length);
    expect(run.done).toBe(true);
    expect(run.out).toBe('event: t\ndata: 1\n\nevent: t\ndata: 2\n\nevent: t\ndata: 3\n\nevent: end\ndata: {}\n\n');
    // Each chunk as upstream sent it, less the `usage: null` the agent did not ask for (as the bytes path cuts it).
    const { usage: _usage, ...second } = CHUNKS[1] as Record<string, unknown>;
    expect(run.seen).toEqual([CHUNKS[0], second, CHUNKS[2]]);
    expect(run.seen[1]).not.toHaveProperty('usage');
  });
});
