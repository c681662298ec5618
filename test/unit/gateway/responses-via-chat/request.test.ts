// Responses requests as chat bodies: the whole history a store-less client (Codex) re-sends becomes the chat turns
// a template renders (developer as system, an assistant turn's text, reasoning and calls joined, tool outputs as
// tool messages), namespaced tools keep their namespace in the name, service-only fields stay behind, engine extras
// go on, and what cannot be served is a 400 naming the field.
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../../../src/errors.js';
import { translateResponsesRequest } from '../../../../src/gateway/responses-via-chat/request.js';

function refusal(body: Record<string, unknown>): { message: string; param: unknown } {
  try {
    translateResponsesRequest(body);
  } catch (error) {
    if (isGatewayError(error) && error.code === 'invalid_request')
      return { message: error.message, param: error.param };
    throw error;
  }
  throw new Error('not refused');
}

describe('translateResponsesRequest', () => {
  it("maps Codex's history: developer turns, an assistant turn with reasoning, text and two calls, their outputs", () => {
    const { chat, namespaced } = translateResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Rules' }] },
        { role: 'user', content: 'Run it' },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: null },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'On it.' }] },
        { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
        { type: 'function_call', call_id: 'c2', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'spawned' }] },
      ],
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object' }, strict: false },
        {
          type: 'namespace',
          name: 'multi_agent_v1',
          description: 'd',
          tools: [{ type: 'function', name: 'spawn_agent' }],
        },
        { type: 'web_search', external_web_access: false },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      reasoning: { summary: 'auto' },
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'k',
      client_metadata: { a: 'b' },
      stream: true,
      top_k: 20,
    });
    expect(chat).toEqual({
      top_k: 20,
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Rules' },
        { role: 'user', content: 'Run it' },
        {
          role: 'assistant',
          content: 'On it.',
          reasoning: 'Plan.',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"ls"}' } },
            { id: 'c2', type: 'function', function: { name: 'multi_agent_v1.spawn_agent', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
        { role: 'tool', tool_call_id: 'c2', content: 'spawned' },
      ],
      tools: [
        { type: 'function', function: { name: 'exec_command', parameters: { type: 'object' }, strict: false } },
        {
          type: 'function',
          function: { name: 'multi_agent_v1.spawn_agent', parameters: { type: 'object', properties: {} } },
        },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect([...namespaced]).toEqual([
      ['multi_agent_v1.spawn_agent', { namespace: 'multi_agent_v1', name: 'spawn_agent' }],
    ]);
  });

  it('maps the sampling and output fields', () => {
    const { chat, isStream } = translateResponsesRequest({
      model: 'm',
      input: 'hi',
      max_output_tokens: 64,
      temperature: 0.5,
      top_p: 0.9,
      top_logprobs: 2,
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
    });
    expect(isStream).toBe(false);
    expect(chat).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 64,
      temperature: 0.5,
      top_p: 0.9,
      top_logprobs: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
    });
  });

  it('refuses what needs stored state or tools nobody runs, naming the field', () => {
    expect(refusal({ model: 'm', input: 'x', previous_response_id: 'resp_1' }).param).toBe('previous_response_id');
    expect(refusal({ model: 'm', input: 'x', background: true }).param).toBe('background');
    expect(refusal({ model: 'm', input: [{ type: 'item_reference', id: 'x' }] }).param).toBe('input.0.type');
    expect(refusal({ model: 'm', input: 'x', tools: [{ type: 'code_interpreter' }] })).toEqual({
      message: "tools.0: hosted tool type 'code_interpreter' has no counterpart on this engine",
      param: 'tools.0.type',
    });
    expect(refusal({ model: 'm', input: 'x', tools: [{ type: 'custom', name: 'apply_patch' }] }).param).toBe(
      'tools.0.type',
    );
    const file = { role: 'user', content: [{ type: 'input_file', file_id: 'f' }] };
    expect(refusal({ model: 'm', input: [file] }).param).toBe('input.0.content.0.type');
    expect(refusal({ model: 'm', input: [] }).param).toBe('input');
  });
});
