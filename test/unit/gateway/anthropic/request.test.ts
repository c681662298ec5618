// Messages API requests as chat completions bodies (src/gateway/anthropic/request.ts): the shapes Claude Code and
// other Anthropic clients send, and the 400s for what chat cannot express.
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../../../src/errors.js';
import { translateMessagesRequest } from '../../../../src/gateway/anthropic/request.js';
import { ThinkingSignatures } from '../../../../src/gateway/anthropic/thinking-signature.js';

const base = { model: 'm', max_tokens: 64 };
const signatures = ThinkingSignatures.fromKeys(['a-gateway-agent-key']);

function chatOf(body: Record<string, unknown>): Record<string, any> {
  return translateMessagesRequest({ ...base, ...body }, signatures).chat;
}

function refusal(body: Record<string, unknown>): { message: string; param: string | null; code: string } {
  try {
    translateMessagesRequest(body, signatures);
  } catch (error) {
    if (isGatewayError(error)) return { message: error.message, param: error.param, code: error.code };
    throw error;
  }
  throw new Error('translated without a refusal');
}

describe('messages', () => {
  it('leads with the system prompt and keeps a system message inside messages where it is', () => {
    const chat = chatOf({
      system: [
        { type: 'text', text: 'billing line' },
        { type: 'text', text: 'identity', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'system', content: [{ type: 'text', text: 'env', cache_control: { type: 'ephemeral' } }] },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'billing line' },
          { type: 'text', text: 'identity' },
        ],
      },
      { role: 'user', content: 'hello' },
      { role: 'system', content: 'env' },
    ]);
  });

  it('puts tool results right after the calls, before the rest of the user turn, as tool messages', () => {
    const chat = chatOf({
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Running both.' },
            { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } },
            { type: 'tool_use', id: 't2', name: 'Read', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'both done' },
            { type: 'tool_result', tool_use_id: 't1', content: 'a\nb', is_error: false },
            {
              type: 'tool_result',
              tool_use_id: 't2',
              content: [
                { type: 'text', text: 'x' },
                { type: 'text', text: 'y' },
              ],
            },
          ],
        },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: 'Running both.',
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
          { id: 't2', type: 'function', function: { name: 'Read', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'a\nb' },
      {
        role: 'tool',
        tool_call_id: 't2',
        content: [
          { type: 'text', text: 'x' },
          { type: 'text', text: 'y' },
        ],
      },
      { role: 'user', content: 'both done' },
    ]);
  });

  it('hands thinking to the template as the assistant`s reasoning and drops redacted thinking', () => {
    const chat = chatOf({
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'thinking', thinking: 'step 1. ', signature: signatures.sign('step 1. ') },
            { type: 'thinking', thinking: 'step 2.', signature: signatures.sign('step 2.') },
            { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
          ],
        },
      ],
    });
    expect(chat.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      reasoning: 'step 1. step 2.',
    });
  });

  it('refuses a thinking block whose signature this gateway did not issue for its text', () => {
    const history = (block: Record<string, unknown>) => ({
      ...base,
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [block, { type: 'text', text: 'a' }] },
        { role: 'user', content: 'more' },
      ],
    });
    const issued = signatures.sign('my reasoning');
    const foreign = [
      { type: 'thinking', thinking: 'my reasoning', signature: '' },
      { type: 'thinking', thinking: 'my reasoning' },
      // Anthropic's own signatures are base64 blobs of its own.
      { type: 'thinking', thinking: 'my reasoning', signature: 'EqQBCkgIARABGAIiQL2x' },
      // The text edited after it was answered.
      { type: 'thinking', thinking: 'my reasoning, edited', signature: issued },
      // Another gateway's key.
      {
        type: 'thinking',
        thinking: 'my reasoning',
        signature: ThinkingSignatures.fromKeys(['x'.repeat(16)]).sign('my reasoning'),
      },
    ];
    for (const block of foreign) {
      const refused = refusal(history(block));
      expect(refused.code).toBe('invalid_request');
      expect(refused.param).toBe('messages.1.content.0.signature');
      expect(refused.message).toContain('Invalid `signature` in `thinking` block');
    }
    expect(chatOf(history({ type: 'thinking', thinking: 'my reasoning', signature: issued })).messages[1]).toEqual({
      role: 'assistant',
      content: 'a',
      reasoning: 'my reasoning',
    });
  });

  it('sends images in tool results as image_url parts of the tool message', () => {
    const chat = chatOf({
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't',
              content: [
                { type: 'text', text: 'screenshot:' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'BBBB' } },
              ],
            },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: 'tool',
        tool_call_id: 't',
        content: [
          { type: 'text', text: 'screenshot:' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,BBBB' } },
        ],
      },
    ]);
  });

  it('sends images as image_url parts (the engine decides whether it takes them)', () => {
    const chat = chatOf({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'text', text: 'what is it?' },
          ],
        },
      ],
    });
    expect(chat.messages[0].content).toEqual([
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAAA' } },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'text', text: 'what is it?' },
    ]);
  });
});

describe('request fields', () => {
  it('maps sampling fields, stop sequences and thinking, and asks a stream for its usage', () => {
    const translated = translateMessagesRequest(
      {
        ...base,
        messages: [{ role: 'user', content: 'x' }],
        temperature: 0.5,
        top_p: 0.9,
        top_k: 20,
        stop_sequences: ['END'],
        thinking: { type: 'disabled' },
        stream: true,
      },
      signatures,
    );
    expect(translated.isStream).toBe(true);
    expect(translated.stopSequences).toEqual(['END']);
    expect(translated.chat).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 64,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 20,
      stop: ['END'],
      chat_template_kwargs: { enable_thinking: false },
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('keeps Anthropic-only fields back and sends keys the Messages API does not define on to the engine', () => {
    const chat = chatOf({
      messages: [{ role: 'user', content: 'x' }],
      metadata: { user_id: 'u' },
      context_management: { edits: [] },
      output_config: { effort: 'medium' },
      cache_control: { type: 'ephemeral' },
      thinking: { type: 'adaptive' },
      chat_template_kwargs: { enable_thinking: false, custom: 1 },
      repetition_penalty: 1.1,
    });
    expect(chat).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 64,
      // The client's own template kwargs are more specific than the Messages API switch.
      chat_template_kwargs: { enable_thinking: false, custom: 1 },
      repetition_penalty: 1.1,
    });
  });

  it('maps tools and tool_choice; a deferred tool appears only once a tool_reference loaded it', () => {
    const schema = { type: 'object', properties: { q: { type: 'string' } } };
    const tools = [
      { name: 'Search', description: 'finds', input_schema: schema, cache_control: { type: 'ephemeral' } },
      { name: 'Later', input_schema: schema, defer_loading: true },
    ];
    const without = chatOf({ tools, tool_choice: { type: 'auto' }, messages: [{ role: 'user', content: 'x' }] });
    expect(without.tools).toEqual([
      { type: 'function', function: { name: 'Search', description: 'finds', parameters: schema } },
    ]);
    expect(without.tool_choice).toBe('auto');
    const loaded = chatOf({
      tools,
      tool_choice: { type: 'none' },
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'Search', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't', content: [{ type: 'tool_reference', tool_name: 'Later' }] },
          ],
        },
      ],
    });
    expect(loaded.tools.map((t: any) => t.function.name)).toEqual(['Search', 'Later']);
    expect(loaded.tool_choice).toBe('none');
    expect(loaded.messages[2]).toEqual({ role: 'tool', tool_call_id: 't', content: '' });
  });

  it('sends no tool_choice when no tool is left to choose from (vLLM refuses one without tools)', () => {
    const chat = chatOf({
      tools: [{ name: 'Later', input_schema: { type: 'object' }, defer_loading: true }],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(chat).not.toHaveProperty('tools');
    expect(chat).not.toHaveProperty('tool_choice');
  });
});

describe('refusals', () => {
  const user = [{ role: 'user', content: 'x' }];

  it.each([
    ['no max_tokens', { model: 'm', messages: user }, 'max_tokens'],
    ['no messages', { ...base, messages: [] }, 'messages'],
    ['an unknown role', { ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role'],
    [
      'a document block',
      { ...base, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] },
      'messages.0.content.0.type',
    ],
    [
      'a document in a tool result',
      {
        ...base,
        messages: [
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: {} }] }],
          },
        ],
      },
      'messages.0.content.0.content.0',
    ],
    [
      'an image source chat cannot carry',
      { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] },
      'messages.0.content.0.source',
    ],
    [
      'a hosted tool',
      { ...base, messages: user, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      'tools.0.type',
    ],
    ['n > 1', { ...base, messages: user, n: 2 }, 'n'],
    ['a thinking type it does not know', { ...base, messages: user, thinking: { type: 'sometimes' } }, 'thinking.type'],
  ])('refuses %s with a 400 naming the field', (_name, body, param) => {
    const refused = refusal(body);
    expect(refused.code).toBe('invalid_request');
    expect(refused.param).toBe(param);
  });
});
