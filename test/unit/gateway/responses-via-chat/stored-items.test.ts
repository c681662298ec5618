// References to earlier Responses answers (src/gateway/responses-via-chat/stored-items.ts), resolved from recorded
// spans as the store returns them: output items rebuilt with the ids the answer had, the previous call's
// conversation carried (reasoning of earlier turns included, one copy of the instructions), and what is no answer
// of the attempt (another API's call, an aborted generation, a call recorded without content) refused by name.
import { describe, expect, it } from 'vitest';
import * as A from '../../../../src/contracts/span-attributes.js';
import { isGatewayError } from '../../../../src/errors.js';
import { resolveStoredState } from '../../../../src/gateway/responses-via-chat/stored-items.js';
import type { Span } from '../../../../src/store/core/types.js';

type Obj = Record<string, unknown>;

const attempt = { rid: 'ro-1', aid: 'at-1' };

function span(options: { id: string; input: unknown[] | null; output: unknown[] | null; extra?: Obj }): Span {
  const attributes: Obj = {
    [A.ATTR_API]: A.API_VALUE_OPENAI_RESPONSES,
    [A.ATTR_GEN_AI_RESPONSE_ID]: options.id,
    ...options.extra,
  };
  if (options.input !== null) attributes[A.ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(options.input);
  if (options.output !== null) attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify(options.output);
  return { rollout_id: 'ro-1', attempt_id: 'at-1', sequence_id: 1, attributes } as unknown as Span;
}

const firstInput = [
  { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
  { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
];
const firstOutput = [
  {
    role: 'assistant',
    parts: [
      { type: 'reasoning', content: 'Call the tool.' },
      { type: 'text', content: 'Checking.' },
      { type: 'tool_call', id: 'call_1', name: 'ns.get_weather', arguments: { city: 'Paris' } },
    ],
    finish_reason: 'tool_calls',
  },
];
const spans = [
  span({ id: 'chatcmpl-1', input: firstInput, output: firstOutput }),
  // A chat call with the same kind of id: not a Responses answer.
  span({ id: 'chatcmpl-2', input: firstInput, output: firstOutput, extra: { [A.ATTR_API]: 'openai.chat' } }),
  span({ id: 'chatcmpl-3', input: firstInput, output: firstOutput, extra: { [A.ATTR_CALL_OUTCOME]: 'aborted' } }),
  span({ id: 'chatcmpl-4', input: null, output: null }),
];

async function resolve(body: Obj) {
  return resolveStoredState({ body, attempt, spans: async () => spans });
}

async function refusal(body: Obj): Promise<{ message: string; param: string | null }> {
  try {
    await resolve(body);
  } catch (error) {
    if (isGatewayError(error)) return { message: error.message, param: error.param };
    throw error;
  }
  throw new Error('resolved without a refusal');
}

describe('item_reference', () => {
  it('becomes the output item it names, with the answer`s ids and the chat name of the function', async () => {
    const stored = await resolve({
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'item_reference', id: 'rs_1_0' },
        { type: 'item_reference', id: 'msg_1_1' },
        { type: 'item_reference', id: 'fc_1_2' },
      ],
    });
    expect(stored?.carried).toEqual([]);
    expect(stored?.input).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        id: 'rs_1_0',
        type: 'reasoning',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'Call the tool.' }],
        status: 'completed',
      },
      {
        id: 'msg_1_1',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Checking.', annotations: [], logprobs: [] }],
      },
      {
        id: 'fc_1_2',
        type: 'function_call',
        status: 'completed',
        call_id: 'call_1',
        name: 'ns.get_weather',
        arguments: '{"city":"Paris"}',
      },
    ]);
  });

  it('refuses an id that is no answer of the attempt: another API`s call, an aborted one, one without content', async () => {
    for (const id of ['msg_2_1', 'msg_3_1', 'msg_4_1', 'msg_1_7']) {
      const refused = await refusal({ input: [{ type: 'item_reference', id }] });
      expect(refused.param).toBe('input.0.id');
      expect(refused.message).toContain(
        `input.0: item '${id}' is not an output item of a recorded response of rollout 'ro-1', attempt 'at-1'`,
      );
    }
  });

  it('needs an attempt: an unattributed call is refused without reading anything', async () => {
    const refused = resolveStoredState({
      body: { input: [{ type: 'item_reference', id: 'msg_1_1' }] },
      attempt: null,
      spans: () => Promise.reject(new Error('read the store')),
    });
    await expect(refused).rejects.toThrow('stored responses are resolved within a rollout attempt');
  });

  it('reads nothing for a request without references', async () => {
    const stored = await resolveStoredState({
      body: { input: 'hi' },
      attempt,
      spans: () => Promise.reject(new Error('read the store')),
    });
    expect(stored).toBeNull();
  });
});

describe('previous_response_id', () => {
  it('carries the conversation as recorded, then the output items; new instructions replace the old', async () => {
    const withInstructions = await resolve({
      previous_response_id: 'resp_1',
      instructions: 'Be brief.',
      input: 'More?',
    });
    expect(withInstructions?.carried).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
    const input = withInstructions?.input as Obj[];
    expect(input.map((item) => item.id ?? item.role)).toEqual(['rs_1_0', 'msg_1_1', 'fc_1_2', 'user']);
    const without = await resolve({ previous_response_id: 'resp_1', input: 'More?' });
    expect(without?.carried).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
    ]);
  });

  it('keeps an earlier turn`s reasoning, tool calls and tool results as the template got them', async () => {
    const later = [
      ...firstInput,
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', content: 'Call the tool.' },
          { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } },
        ],
      },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', result: 'Sunny' }] },
    ];
    const stored = await resolveStoredState({
      body: { previous_response_id: 'resp_9', input: 'Thanks' },
      attempt,
      spans: async () => [span({ id: 'chatcmpl-9', input: later, output: [{ role: 'assistant', parts: [] }] })],
    });
    expect(stored?.carried.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        reasoning: 'Call the tool.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
    ]);
    expect(stored?.input).toEqual([{ role: 'user', content: 'Thanks' }]);
  });

  it('refuses an unknown id by name', async () => {
    const refused = await refusal({ previous_response_id: 'resp_2', input: 'x' });
    expect(refused.param).toBe('previous_response_id');
    expect(refused.message).toContain("previous_response_id: 'resp_2' is not a recorded response of rollout 'ro-1'");
    expect(refused.message).toContain('Send the whole history instead');
  });
});
