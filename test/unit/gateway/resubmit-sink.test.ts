// The agent's sink of an abort-resubmit pool's call (src/gateway/swap/resubmit-sink.ts): bytes pass through until the
// call is marked; then an aborted answer never reaches the agent as if it were whole, wherever the engine's abort
// marker falls in the writes.
import type { OutgoingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { openAIErrorBody } from '../../../src/errors.js';
import type { AgentSink } from '../../../src/gateway/stream/agent-sink.js';
import { ResubmitSink } from '../../../src/gateway/swap/resubmit-sink.js';

const FAILURE = openAIErrorBody({ message: 'call again', type: 'service_unavailable', code: 'weights_swapped' });

class RecordingSink implements AgentSink {
  head: { status: number; headers: OutgoingHttpHeaders } | null = null;
  body = '';
  ended = false;
  get headersSent(): boolean {
    return this.head !== null;
  }
  writeHead(status: number, headers: OutgoingHttpHeaders): unknown {
    this.head = { status, headers };
    return this;
  }
  write(chunk: Uint8Array): boolean {
    this.body += Buffer.from(chunk).toString('utf8');
    return true;
  }
  end(chunk?: Uint8Array): unknown {
    if (chunk !== undefined) this.body += Buffer.from(chunk).toString('utf8');
    this.ended = true;
    return this;
  }
  on(): unknown {
    return this;
  }
  once(): unknown {
    return this;
  }
  removeListener(): unknown {
    return this;
  }
  destroy(): unknown {
    return this;
  }
}

function sinkFor(options: { stream: boolean; continuable: boolean; marked?: boolean; continuation?: boolean }) {
  const agent = new RecordingSink();
  const state = { marked: options.marked ?? false };
  const sink = new ResubmitSink({
    agent,
    marked: () => state.marked,
    endpoint: options.continuable ? 'completions' : 'chat',
    stream: options.stream,
    continuable: options.continuable,
    continuation: options.continuation ?? false,
    failure: FAILURE,
  });
  return { agent, sink, state };
}

const bytes = (text: string) => Buffer.from(text);
const chunk = (text: string, finish: unknown = null) =>
  `data: ${JSON.stringify({ id: 'cmpl-1', choices: [{ index: 0, text, finish_reason: finish, stop_reason: null }] })}\n\n`;

describe('ResubmitSink', () => {
  it('passes an unmarked call through untouched', () => {
    const { agent, sink } = sinkFor({ stream: false, continuable: false });
    sink.writeHead(200, { 'content-type': 'application/json' });
    sink.end(bytes('{"choices":[{"finish_reason":"abort"}]}'));
    expect(agent.head?.status).toBe(200);
    expect(agent.body).toBe('{"choices":[{"finish_reason":"abort"}]}');
    expect(sink.aborted).toBe(false);
  });

  it('holds a marked non-stream answer and drops it when aborted (SGLang object form too)', () => {
    const { agent, sink } = sinkFor({ stream: false, continuable: false, marked: true });
    sink.writeHead(200, {});
    sink.write(bytes('{"choices":[{"finish_reason":{"type":'));
    sink.end(bytes('"abort","message":"x"}}]}'));
    expect(sink.aborted).toBe(true);
    expect(agent.head).toBeNull();
    expect(agent.body).toBe('');
  });

  it('passes a marked non-stream answer that finished normally, head and body together', () => {
    const { agent, sink } = sinkFor({ stream: false, continuable: false, marked: true });
    sink.writeHead(200, { 'content-length': 37 });
    sink.end(bytes('{"choices":[{"finish_reason":"stop"}]}'));
    expect(agent.head?.status).toBe(200);
    expect(agent.body).toBe('{"choices":[{"finish_reason":"stop"}]}');
    expect(agent.ended).toBe(true);
  });

  it('ends a marked chat stream with the retryable error when the marker is split across two writes', () => {
    const { agent, sink, state } = sinkFor({ stream: true, continuable: false });
    sink.writeHead(200, {});
    sink.write(bytes('data: {"choices":[{"delta":{"content":"a"}}]}\n\n'));
    state.marked = true;
    sink.write(bytes('data: {"choices":[{"delta":{},"finish_reas'));
    sink.write(bytes('on":"abort"}]}\n\ndata: [DONE]\n\n'));
    sink.end();
    expect(sink.streamFailed).toBe(true);
    expect(agent.body).toContain('"content":"a"');
    expect(agent.body).toContain('"code":"weights_swapped"');
    expect(agent.body).not.toContain('"finish_reason":"abort"');
    expect(agent.body).not.toContain('[DONE]');
    expect(agent.ended).toBe(true);
  });

  it('drops a marked chat stream that relayed no token, split role chunk included, so its call can be sent again', () => {
    const { agent, sink, state } = sinkFor({ stream: true, continuable: false });
    sink.writeHead(200, {});
    const role = 'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n';
    sink.write(bytes(role.slice(0, 25)));
    sink.write(bytes(role.slice(25)));
    state.marked = true;
    sink.write(bytes('data: {"choices":[{"delta":{},"finish_reason":"abort"}]}\n\ndata: [DONE]\n\n'));
    sink.end();
    expect(sink.restart).toBe(true);
    expect(sink.streamFailed).toBe(false);
    expect(agent.body).toBe(role);
    expect(agent.ended).toBe(false);
  });

  it('a token split across two writes counts as relayed: the stream fails instead of starting again', () => {
    const { agent, sink, state } = sinkFor({ stream: true, continuable: false });
    sink.writeHead(200, {});
    const token = 'data: {"choices":[{"delta":{"reasoning_content":"h"}}]}\n\n';
    sink.write(bytes(token.slice(0, 30)));
    sink.write(bytes(token.slice(30)));
    state.marked = true;
    sink.write(bytes('data: {"choices":[{"delta":{},"finish_reason":"abort"}]}\n\n'));
    expect(sink.restart).toBe(false);
    expect(sink.streamFailed).toBe(true);
    expect(agent.body).toContain('"code":"weights_swapped"');
  });

  it('passes a marked completions stream up to the aborted chunk, without its finish reason, and keeps it open', () => {
    const { agent, sink, state } = sinkFor({ stream: true, continuable: true });
    sink.writeHead(200, {});
    const aborted = chunk('c', 'abort');
    sink.write(bytes(chunk('a') + chunk('b').slice(0, 10)));
    state.marked = true;
    sink.write(bytes(chunk('b').slice(10) + aborted.slice(0, 20)));
    sink.write(bytes(`${aborted.slice(20)}data: {"usage":{}}\n\ndata: [DONE]\n\n`));
    sink.end();
    expect(sink.aborted).toBe(true);
    expect(sink.streamFailed).toBe(false);
    expect(agent.ended).toBe(false);
    expect(agent.body).toBe(chunk('a') + chunk('b') + chunk('c'));
  });

  it('a continuation keeps the agent headers it already sent and follows on the same response', () => {
    const { agent, sink } = sinkFor({ stream: true, continuable: true, marked: false, continuation: true });
    sink.writeHead(200, { 'x-request-id': 'second' });
    sink.write(bytes(chunk('d', 'stop')));
    sink.end(bytes('data: [DONE]\n\n'));
    expect(agent.head).toBeNull();
    expect(agent.body).toBe(`${chunk('d', 'stop')}data: [DONE]\n\n`);
    expect(agent.ended).toBe(true);
  });
});
