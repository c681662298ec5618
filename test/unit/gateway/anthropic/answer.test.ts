// The engine's chat answers as Anthropic answers (src/gateway/anthropic/{response,stream,sink}.ts): reasoning in
// either of vLLM's fields becomes thinking, tool calls become tool_use blocks and input_json_delta fragments, each
// chunk's events go out with that chunk, stop reasons and usage map, an aborted generation is an error, and the
// sink turns the relay's writes (whole bodies, events, its held last write) into Anthropic's bytes.
import type { OutgoingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { chatCompletionToMessage } from '../../../../src/gateway/anthropic/response.js';
import { AnthropicSink } from '../../../../src/gateway/anthropic/sink.js';
import { ChatStreamTranslator } from '../../../../src/gateway/anthropic/stream.js';
import { ThinkingSignatures } from '../../../../src/gateway/anthropic/thinking-signature.js';
import { parseSse } from '../../../helpers/anthropic-agent.js';

type Obj = Record<string, any>;

const signatures = ThinkingSignatures.fromKeys([]);
const context = { stopSequences: [], signatures };

function chunk(delta: Obj, extra: Obj = {}): Obj {
  return { id: 'chatcmpl-abc', model: 'm', choices: [{ index: 0, delta, finish_reason: null, ...extra }] };
}

function finishChunk(reason: string, extra: Obj = {}): Obj {
  return { id: 'chatcmpl-abc', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: reason, ...extra }] };
}

const usageChunk = {
  id: 'chatcmpl-abc',
  choices: [],
  usage: { prompt_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 6 } },
};

/** Events per chunk, so a test can see that each delta went out with the chunk that carried it. */
function translate(chunks: readonly Obj[], stopSequences: string[] = []): { perChunk: Obj[][]; closing: Obj[] } {
  const translator = new ChatStreamTranslator({ stopSequences, signatures });
  const perChunk = chunks.map((c) => parseSse(translator.chunk(c)).map((e) => e.data));
  return { perChunk, closing: parseSse(translator.finish()).map((e) => e.data) };
}

describe('stream translation', () => {
  it('turns reasoning (either field) into a thinking block, then text, each delta with its chunk', () => {
    const { perChunk, closing } = translate([
      { ...chunk({ role: 'assistant', content: '' }), prompt_token_ids: [1, 2, 3] },
      chunk({ reasoning: 'think ' }),
      // Older vLLM builds name it reasoning_content; some send both with the same text.
      chunk({ reasoning_content: 'more' }),
      chunk({ reasoning: 'x', reasoning_content: 'x' }),
      chunk({ content: 'Answer' }),
      finishChunk('stop'),
      usageChunk,
    ]);
    expect(perChunk[0]?.map((e) => e.type)).toEqual(['message_start', 'ping']);
    expect(perChunk[0]?.[0]?.message).toMatchObject({ id: 'msg_abc', model: 'm', usage: { input_tokens: 3 } });
    expect(perChunk[1]).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'think ' } },
    ]);
    expect(perChunk[2]).toEqual([
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'more' } },
    ]);
    expect(perChunk[3]).toEqual([
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'x' } },
    ]);
    expect(perChunk[4]).toEqual([
      // The signature covers the block's whole text and comes just before its stop, as on Anthropic's API.
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: signatures.sign('think morex') },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Answer' } },
    ]);
    expect(perChunk[5]).toEqual([{ type: 'content_block_stop', index: 1 }]);
    expect(perChunk[6]).toEqual([]);
    expect(closing).toEqual([
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        // Anthropic counts prompt-cache reads apart from input_tokens.
        usage: { input_tokens: 4, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 6 },
      },
      { type: 'message_stop' },
    ]);
  });

  it('streams each tool call as a tool_use block and its argument fragments as input_json_delta', () => {
    const { perChunk, closing } = translate([
      chunk({ role: 'assistant', content: '' }),
      chunk({ tool_calls: [{ index: 0, id: 'call-1', type: 'function', function: { name: 'Bash', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"command":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] }),
      chunk({
        tool_calls: [{ index: 1, id: 'call-2', type: 'function', function: { name: 'Read', arguments: '{}' } }],
      }),
      finishChunk('tool_calls'),
    ]);
    expect(perChunk.slice(1).flat()).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'call-1', name: 'Bash', input: {} },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"command":' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"ls"}' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'call-2', name: 'Read', input: {} },
      },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 1 },
    ]);
    expect(closing[0]?.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('maps length to max_tokens and a stop string the client asked for to stop_sequence', () => {
    expect(translate([chunk({ content: 'a' }), finishChunk('length')]).closing[0]?.delta.stop_reason).toBe(
      'max_tokens',
    );
    const stopped = translate([chunk({ content: 'a' }), finishChunk('stop', { stop_reason: 'END' })], ['END']);
    expect(stopped.closing[0]?.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    // A token id or a string the client did not ask for (EOS) is a plain end of turn.
    const eos = translate([chunk({ content: 'a' }), finishChunk('stop', { stop_reason: 151645 })], ['END']);
    expect(eos.closing[0]?.delta).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
  });

  it('counts output tokens from the token ids when the engine sent no usage', () => {
    const { closing } = translate([
      { ...chunk({ content: 'ab' }, { token_ids: [5, 6] }), prompt_token_ids: [1, 2] },
      finishChunk('stop', { token_ids: [7] }),
    ]);
    expect(closing[0]?.usage).toMatchObject({ input_tokens: 2, output_tokens: 3 });
  });

  it('ends an aborted generation with an overloaded error instead of a message that looks complete', () => {
    const { closing } = translate([chunk({ content: 'half an ans' }), finishChunk('abort')]);
    expect(closing).toEqual([
      { type: 'error', error: { type: 'overloaded_error', message: expect.stringMatching(/aborted/) } },
    ]);
  });
});

describe('non-stream translation', () => {
  it('orders thinking, text and tool_use blocks and maps usage', () => {
    const answer = chatCompletionToMessage(
      {
        id: 'chatcmpl-1',
        model: 'm',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: 'Checking.',
              reasoning_content: 'why',
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":[1]}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 9, completion_tokens: 5 },
      },
      context,
    );
    expect(answer).toEqual({
      aborted: false,
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'm',
        content: [
          { type: 'thinking', thinking: 'why', signature: signatures.sign('why') },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'c1', name: 'f', input: { a: [1] } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 9, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    });
  });

  it('reports an aborted generation as such', () => {
    const aborted = chatCompletionToMessage(
      { choices: [{ message: { content: 'half' }, finish_reason: 'abort' }] },
      context,
    );
    expect(aborted).toEqual({ aborted: true });
  });
});

/** An in-memory agent sink that keeps what the Anthropic sink wrote. */
function memorySink() {
  const state = { status: 0, headers: {} as OutgoingHttpHeaders, body: '', ended: false, headersSent: false };
  const sink = {
    writeHead(status: number, headers: OutgoingHttpHeaders) {
      state.status = status;
      state.headers = headers;
      state.headersSent = true;
    },
    write(bytes: Uint8Array) {
      state.body += Buffer.from(bytes).toString('utf8');
      return true;
    },
    end(bytes?: Uint8Array) {
      if (bytes !== undefined) state.body += Buffer.from(bytes).toString('utf8');
      state.ended = true;
    },
    on: () => sink,
    once: () => sink,
    removeListener: () => sink,
    destroy: () => sink,
    get headersSent() {
      return state.headersSent;
    },
  };
  return { sink, state };
}

describe('sink', () => {
  const sse = (data: unknown) => Buffer.from(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);

  it('translates a relayed stream as it is written and closes it with the held [DONE]', () => {
    const { sink, state } = memorySink();
    const anthropic = new AnthropicSink({ agent: sink, context, requestId: 'req-1' });
    anthropic.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req-1' });
    expect(state.headers).toMatchObject({ 'content-type': 'text/event-stream', 'request-id': 'req-1' });
    // Two events in one write, then one split across writes.
    anthropic.write(Buffer.concat([sse(chunk({ role: 'assistant', content: '' })), sse(chunk({ content: 'Hi' }))]));
    expect(parseSse(state.body).map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
    ]);
    const split = sse(finishChunk('stop'));
    anthropic.write(split.subarray(0, 10));
    anthropic.write(split.subarray(10));
    expect(parseSse(state.body).at(-1)?.event).toBe('content_block_stop');
    expect(state.ended).toBe(false);
    anthropic.end(sse('[DONE]'));
    expect(
      parseSse(state.body)
        .map((e) => e.event)
        .slice(-2),
    ).toEqual(['message_delta', 'message_stop']);
    expect(state.ended).toBe(true);
  });

  it('turns the relay`s error event into an Anthropic error event', () => {
    const { sink, state } = memorySink();
    const anthropic = new AnthropicSink({ agent: sink, context, requestId: 'r' });
    anthropic.writeHead(200, { 'content-type': 'text/event-stream' });
    anthropic.write(sse(chunk({ content: 'Hi' })));
    anthropic.end(
      sse({ error: { message: 'The upstream stream timed out', type: 'upstream_error', code: 'upstream_timeout' } }),
    );
    expect(parseSse(state.body).at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'timeout_error', message: 'The upstream stream timed out' } },
    });
  });

  it('writes a JSON answer once, with its own length, and errors in Anthropic`s shape', () => {
    const ok = memorySink();
    const answer = Buffer.from(
      JSON.stringify({
        id: 'chatcmpl-9',
        model: 'm',
        choices: [{ message: { content: 'hey' }, finish_reason: 'stop' }],
      }),
    );
    const anthropic = new AnthropicSink({ agent: ok.sink, context, requestId: 'r' });
    anthropic.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    expect(ok.state.headersSent).toBe(false);
    anthropic.end(answer);
    expect(JSON.parse(ok.state.body).content).toEqual([{ type: 'text', text: 'hey' }]);
    expect(ok.state.headers['content-length']).toBe(Buffer.byteLength(ok.state.body));

    const limited = memorySink();
    const rateLimited = new AnthropicSink({ agent: limited.sink, context, requestId: 'r' });
    rateLimited.writeHead(429, { 'content-type': 'application/json' });
    rateLimited.end(
      Buffer.from(JSON.stringify({ error: { message: 'slow down', type: 'rate', param: null, code: '429' } })),
    );
    expect(limited.state.status).toBe(429);
    expect(limited.state.headers['retry-after']).toBe('1');
    expect(JSON.parse(limited.state.body)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
    });

    const html = memorySink();
    const gateway = new AnthropicSink({ agent: html.sink, context, requestId: 'r' });
    gateway.writeHead(502, { 'content-type': 'text/html' });
    gateway.end(Buffer.from('<html>Bad Gateway</html>'));
    expect(html.state.headers['content-type']).toBe('application/json');
    expect(JSON.parse(html.state.body)).toEqual({
      type: 'error',
      error: { type: 'api_error', message: '<html>Bad Gateway</html>' },
    });
  });

  it('answers an aborted non-stream generation with a 503 the agent retries', () => {
    const { sink, state } = memorySink();
    const anthropic = new AnthropicSink({ agent: sink, context, requestId: 'r' });
    anthropic.writeHead(200, { 'content-type': 'application/json' });
    anthropic.end(Buffer.from(JSON.stringify({ choices: [{ message: { content: 'ha' }, finish_reason: 'abort' }] })));
    expect(state.status).toBe(503);
    expect(state.headers['retry-after']).toBe('1');
    expect(JSON.parse(state.body).error.type).toBe('overloaded_error');
  });
});
