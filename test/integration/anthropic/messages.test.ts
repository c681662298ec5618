// The Anthropic Messages API through the gateway, with the official @anthropic-ai/sdk as the agent over real
// sockets, in front of the engine twin: answers (JSON and named-event streams) equal a reference translation of
// the engine's own answer to the chat call the gateway made; a tool call streams as input_json_delta fragments the
// SDK assembles, and its result goes back as a chat tool message; every call is one span with token ids, sequence
// ids and the API it came in on, stored before the stream's last event; a broken engine stream is the SDK's error.
import type Anthropic from '@anthropic-ai/sdk';
import { APIError } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { ThinkingSignatures } from '../../../src/gateway/anthropic/thinking-signature.js';
import { type AnthropicAgents, anthropicAgents, type NamedEvent, parseSse } from '../../helpers/anthropic-agent.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

type Obj = Record<string, any>;

let h: Harness;
let agents: AnthropicAgents;
beforeAll(async () => {
  // One try per call: the error cases below must reach the agent as the engine sent them.
  h = await startHarness({}, {}, { retry: { maxAttempts: 1 } });
  agents = anthropicAgents(h.gw.url);
});
afterAll(async () => {
  await agents?.close();
  await h?.close();
});

/** The chat body the gateway sent the engine for its latest call. */
function lastUpstreamBody(): Obj {
  const record = h.mock.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
  return record?.body as Obj;
}

/** The engine's own answer to a chat body (what the gateway got), asked directly. */
async function engineAnswer(body: Obj, stream: boolean): Promise<string> {
  const { stream: _s, stream_options: _o, ...rest } = body;
  const response = await fetch(`${h.mock.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer backend-secret' },
    body: JSON.stringify(stream ? { ...rest, stream: true, stream_options: { include_usage: true } } : rest),
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** The test gateway has no keys: its thinking signatures use the key a keyless gateway derives. */
const signatures = ThinkingSignatures.fromKeys([]);

const STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' };

/** The reference translation of a chat completion into an Anthropic message (the Messages API's documented shape). */
function referenceMessage(chat: Obj): Obj {
  const choice = chat.choices[0];
  const m = choice.message;
  const content: Obj[] = [];
  if (m.reasoning) content.push({ type: 'thinking', thinking: m.reasoning, signature: signatures.sign(m.reasoning) });
  if (m.content) content.push({ type: 'text', text: m.content });
  for (const call of m.tool_calls ?? []) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: JSON.parse(call.function.arguments),
    });
  }
  return {
    id: `msg_${String(chat.id).replace(/^chatcmpl-/, '')}`,
    type: 'message',
    role: 'assistant',
    model: chat.model,
    content,
    stop_reason: STOP[choice.finish_reason],
    stop_sequence: null,
    usage: {
      input_tokens: chat.usage.prompt_tokens,
      output_tokens: chat.usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/** The reference translation of a chat stream into the Messages API's named events. */
function referenceEvents(chunks: Obj[]): NamedEvent[] {
  const out: NamedEvent[] = [];
  const push = (event: string, data: Obj) => out.push({ event, data: { type: event, ...data } });
  const first = chunks[0] as Obj;
  push('message_start', {
    message: {
      id: `msg_${String(first.id).replace(/^chatcmpl-/, '')}`,
      type: 'message',
      role: 'assistant',
      model: first.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: first.prompt_token_ids.length,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    },
  });
  push('ping', {});
  let open: string | null = null;
  let index = -1;
  const toolBlocks = new Map<number, number>();
  let thinking = '';
  const close = () => {
    // A thinking block's signature covers its whole text and comes just before its stop.
    if (open === 'thinking') {
      push('content_block_delta', { index, delta: { type: 'signature_delta', signature: signatures.sign(thinking) } });
    }
    if (open !== null) push('content_block_stop', { index });
    open = null;
    thinking = '';
  };
  let finish = 'stop';
  let usage: Obj = {};
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      const delta = choice.delta ?? {};
      for (const [kind, text] of [
        ['thinking', delta.reasoning],
        ['text', delta.content],
      ] as const) {
        if (!text) continue;
        if (open !== kind) {
          close();
          index++;
          open = kind;
          push('content_block_start', {
            index,
            content_block:
              kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' },
          });
        }
        if (kind === 'thinking') thinking += text;
        push('content_block_delta', {
          index,
          delta: kind === 'text' ? { type: 'text_delta', text } : { type: 'thinking_delta', thinking: text },
        });
      }
      for (const call of delta.tool_calls ?? []) {
        if (!toolBlocks.has(call.index)) {
          close();
          index++;
          open = 'tool_use';
          toolBlocks.set(call.index, index);
          push('content_block_start', {
            index,
            content_block: { type: 'tool_use', id: call.id, name: call.function.name, input: {} },
          });
        }
        if (call.function?.arguments) {
          push('content_block_delta', {
            index: toolBlocks.get(call.index),
            delta: { type: 'input_json_delta', partial_json: call.function.arguments },
          });
        }
      }
      if (choice.finish_reason) {
        finish = choice.finish_reason;
        close();
      }
    }
  }
  push('message_delta', {
    delta: { stop_reason: STOP[finish], stop_sequence: null },
    usage: {
      input_tokens: usage.prompt_tokens,
      output_tokens: usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
  push('message_stop', {});
  return out;
}

/** Ids are made per call (message ids from the engine's response id, tool call ids): equal calls differ only there. */
function withoutIds<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === 'id' && typeof v === 'string' ? '<id>' : v))) as T;
}

/** What Claude Code sends, in small: system blocks with cache_control, a system message inside `messages`, betas. */
function claudeCodeBody(text: string, extra: Obj = {}): Obj {
  return {
    model: 'claude-opus-5-5',
    max_tokens: 300,
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=test;' },
      { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text, cache_control: { type: 'ephemeral' } }] },
      { role: 'system', content: '# Environment\nPlatform: linux', output_config: { effort: 'medium' } },
    ],
    metadata: { user_id: '{"session_id":"s-1"}' },
    thinking: { type: 'adaptive', display: 'omitted' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'medium' },
    ...extra,
  };
}

const CLAUDE_CODE_HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
  'x-api-key': 'agent-key',
  'x-app': 'cli',
};

describe('answers', () => {
  it('answers a non-stream call with the reference translation of the engine answer', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const message = await client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 300,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Tell me about the weather' }],
    });
    const upstream = lastUpstreamBody();
    expect(upstream.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Tell me about the weather' },
    ]);
    const reference = referenceMessage(JSON.parse(await engineAnswer(upstream, false)));
    expect(withoutIds(message)).toEqual(withoutIds(reference));
    expect(message.id).toMatch(/^msg_/);
    expect(message.content[0]?.type).toBe('text');
    expect(message._request_id).toBeTruthy();
  });

  it('streams Claude Code`s request as the reference translation of the engine stream, event by event', async () => {
    const rid = rolloutId();
    const response = await fetch(`${h.gw.url}/rollout/${rid}/attempt/a1/v1/messages?beta=true`, {
      method: 'POST',
      headers: CLAUDE_CODE_HEADERS,
      body: JSON.stringify(claudeCodeBody('Say hi', { stream: true })),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await response.text());
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    const upstream = lastUpstreamBody();
    // The system role inside `messages` keeps its place; cache_control and Anthropic-only fields stay behind.
    expect(upstream.messages).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'x-anthropic-billing-header: cc_version=test;' },
          { type: 'text', text: 'You are a coding agent.' },
        ],
      },
      { role: 'user', content: 'Say hi' },
      { role: 'system', content: '# Environment\nPlatform: linux' },
    ]);
    for (const key of ['metadata', 'context_management', 'output_config', 'thinking'])
      expect(upstream).not.toHaveProperty(key);
    expect(upstream.chat_template_kwargs).toEqual({ enable_thinking: true });
    const chunks = parseSse(await engineAnswer(upstream, true))
      .filter((e) => e.data.done !== true)
      .map((e) => e.data);
    expect(withoutIds(events)).toEqual(withoutIds(referenceEvents(chunks)));
    expect(events.filter((e) => e.event === 'content_block_delta').length).toBeGreaterThan(1);
  });

  it('gives the same message streamed (SDK finalMessage) as not streamed', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const request = {
      model: 'claude-opus-5-5',
      max_tokens: 300,
      messages: [{ role: 'user' as const, content: 'Same either way?' }],
    };
    const whole = await client.messages.create(request);
    const streamed = await client.messages.stream(request).finalMessage();
    const { parsed_output: _parsed, ...final } = streamed as typeof streamed & { parsed_output?: unknown };
    expect(withoutIds(final)).toEqual(withoutIds(whole));
  });

  it('reports a stop sequence the engine stopped at', async () => {
    const rid = rolloutId();
    const message = await agents.client(rid).messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 300,
      stop_sequences: [':'],
      messages: [{ role: 'user', content: 'stop at the colon' }],
    });
    expect(lastUpstreamBody().stop).toEqual([':']);
    expect(message.stop_reason).toBe('stop_sequence');
    expect(message.stop_sequence).toBe(':');
    expect(message.content).toEqual([{ type: 'text', text: expect.not.stringContaining(':') }]);
  });

  it('stops at max_tokens', async () => {
    const rid = rolloutId();
    const message = await agents.client(rid).messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'a long answer please' }],
    });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
  });
});

describe('tools', () => {
  const tools: Anthropic.Tool[] = [
    {
      name: 'Bash',
      description: 'Runs a shell command',
      input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
    {
      name: 'Deferred',
      description: 'Hidden until tool search loads it',
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    } as Anthropic.Tool,
  ];

  it('streams a tool call as input_json_delta fragments, then takes its result back as a chat tool message', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const user = { role: 'user' as const, content: 'Run echo ok in the shell, please' };
    const stream = client.messages.stream({ model: 'claude-opus-5-5', max_tokens: 400, tools, messages: [user] });
    const fragments: string[] = [];
    stream.on('inputJson', (partial) => fragments.push(partial));
    const first = await stream.finalMessage();
    const firstUpstream = lastUpstreamBody();
    expect(firstUpstream.tools).toEqual([
      {
        type: 'function',
        function: { name: 'Bash', description: 'Runs a shell command', parameters: tools[0]?.input_schema },
      },
    ]);
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block) => block.type === 'tool_use');
    if (call?.type !== 'tool_use') throw new Error('no tool_use block');
    expect(call.name).toBe('Bash');
    expect(fragments.length).toBeGreaterThan(1);
    expect(call.input).toEqual(JSON.parse(fragments.join('')));
    const [firstSpan] = await h.spans(rid);
    const recorded = JSON.parse(String(firstSpan?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]));
    expect(recorded[0].parts).toContainEqual({ type: 'tool_call', id: call.id, name: 'Bash', arguments: call.input });

    const second = await client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 400,
      tools,
      messages: [
        user,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: call.id,
              content: 'ok',
              is_error: false,
              cache_control: { type: 'ephemeral' },
            },
          ],
        },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(lastUpstreamBody().messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: call.id, type: 'function', function: { name: 'Bash', arguments: JSON.stringify(call.input) } },
        ],
      },
      { role: 'tool', tool_call_id: call.id, content: 'ok' },
    ]);
    const spans = await h.spans(rid);
    expect(spans.map((s) => s.sequence_id)).toEqual([1, 2]);
    const secondIn = JSON.parse(String(spans[1]?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]));
    expect(secondIn).toContainEqual({
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: call.id, result: 'ok' }],
    });
    // The translation gives the template back exactly what the model produced: turn 2's prompt continues turn 1's.
    const prompt1 = spans[0]?.attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[];
    const response1 = spans[0]?.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[];
    const prompt2 = spans[1]?.attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[];
    expect(prompt2.slice(0, prompt1.length + response1.length)).toEqual([...prompt1, ...response1]);
  });

  it('maps tool_choice any and tool onto chat, and shows a deferred tool once a tool_reference loaded it', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    await client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 50,
      tools,
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(lastUpstreamBody().tool_choice).toBe('required');
    expect(lastUpstreamBody().parallel_tool_calls).toBe(false);
    await client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 50,
      tools,
      tool_choice: { type: 'tool', name: 'Deferred' },
      messages: [
        { role: 'user', content: 'find it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [{ type: 'tool_reference', tool_name: 'Deferred' }],
            } as never,
          ],
        },
      ],
    });
    const upstream = lastUpstreamBody();
    expect(upstream.tool_choice).toEqual({ type: 'function', function: { name: 'Deferred' } });
    expect(upstream.tools.map((t: Obj) => t.function.name)).toEqual(['Bash', 'Deferred']);
  });
});

describe('recording', () => {
  it('records each call as a chat span with token ids, its sequence id and the API it came in on', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const message = await client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'record me' }],
    });
    const stream = client.messages.stream({
      model: 'claude-opus-5-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'and me' }],
    });
    await stream.finalMessage();
    const spans = await h.spans(rid);
    expect(spans.map((s) => s.attributes[A.ATTR_SPAN_SEQUENCE_ID])).toEqual([1, 2]);
    for (const span of spans) {
      expect(span.attributes[A.ATTR_API]).toBe(A.API_VALUE_ANTHROPIC_MESSAGES);
      expect(span.attributes[A.ATTR_GEN_AI_OPERATION_NAME]).toBe('chat');
      expect(span.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
      expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
      expect((span.attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[]).length).toBeGreaterThan(0);
      expect((span.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[]).length).toBeGreaterThan(0);
      expect((span.attributes[A.ATTR_RESPONSE_LOGPROBS] as number[]).length).toBe(
        (span.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[]).length,
      );
    }
    expect(spans[0]?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]).toBe(`chatcmpl-${message.id.slice('msg_'.length)}`);
    expect(spans[0]?.attributes[A.ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBe(message.usage.input_tokens);
    expect(spans[0]?.attributes[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]).toBe(message.usage.output_tokens);
    expect(spans[1]?.attributes[A.ATTR_GEN_AI_REQUEST_STREAM]).toBe(true);
    expect(JSON.parse(String(spans[0]?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'record me' }] },
    ]);
  });

  it('makes the SDK stream throw APIError when the engine breaks the stream, and records a stream error', async () => {
    const rid = rolloutId();
    const stream = await agents.client(rid).messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 200,
      stream: true,
      messages: [{ role: 'user', content: 'a longer answer, please' }],
      // The twin reads faults from this body key; the gateway sends keys the Messages API does not define on.
      mock_fault: 'close-after=4',
    } as never);
    const seen: string[] = [];
    const consume = async () => {
      for await (const event of stream as unknown as AsyncIterable<{ type: string }>) seen.push(event.type);
    };
    const error = await consume().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).type).toBe('api_error');
    expect(seen).toContain('content_block_delta');
    expect(seen).not.toContain('message_stop');
    const [span] = await h.spans(rid);
    expect(span?.status.status_code).toBe('ERROR');
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('stream_error');
  });

  it('passes an engine error event on as an `event: error` of the right type', async () => {
    const rid = rolloutId();
    const response = await fetch(`${h.gw.url}/rollout/${rid}/attempt/a1/v1/messages`, {
      method: 'POST',
      headers: CLAUDE_CODE_HEADERS,
      body: JSON.stringify(
        claudeCodeBody('fail later', { stream: true, mock_fault: 'error-event-after=3;status=503' }),
      ),
    });
    const events = parseSse(await response.text());
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'overloaded_error', message: expect.any(String) } },
    });
    expect(events.map((e) => e.event)).not.toContain('message_stop');
  });
});

describe('side routes', () => {
  it('counts tokens with the engine`s tokenizer: the count is the prompt a call gets', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const conversation = {
      model: 'claude-opus-5-5',
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'How many tokens is this?' }],
    };
    const counted = await client.messages.countTokens(conversation);
    const message = await client.messages.create({ ...conversation, max_tokens: 20 });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('lists models in the Anthropic shape for Anthropic clients, and in the OpenAI shape otherwise', async () => {
    const page = await agents.client(rolloutId()).models.list();
    expect(page.data).toEqual([
      { type: 'model', id: 'mock-model', display_name: 'mock-model', created_at: expect.any(String) },
    ]);
    const openai = await fetch(`${h.gw.url}/v1/models`).then((r) => r.json() as Promise<Obj>);
    expect(openai.object).toBe('list');
  });

  it('answers HEAD /api/hello at the base URL and at the root', async () => {
    for (const path of [`/rollout/${rolloutId()}/attempt/a1/api/hello`, '/api/hello']) {
      const response = await fetch(`${h.gw.url}${path}`, { method: 'HEAD' });
      expect(response.status).toBe(200);
    }
  });
});
