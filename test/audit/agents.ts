// The audit's agents: plain openai SDK code, streaming or not, the way agent frameworks call a chat model. They
// read what the SDK gives them (content, tool calls, the finish reason) and carry on from it, whatever it was.
import type OpenAI from 'openai';

export interface AgentTurn {
  readonly id: string;
  readonly content: string;
  readonly toolCalls: Array<{ id: string; name: string; arguments: string }>;
  readonly finishReason: string | null;
}

const LOOKUP_TOOL = {
  type: 'function',
  function: {
    name: 'lookup',
    description: 'Look a word up in the dictionary',
    parameters: {
      type: 'object',
      properties: { request: { type: 'string' }, nonce: { type: 'string' } },
      required: ['request'],
    },
  },
} as const;

/** Long enough for several 16-token prefix-cache blocks: turns and rollouts share it, as agents' prompts do. */
export const SYSTEM_PROMPT =
  'You are a careful assistant for a dictionary service. Answer briefly, use the lookup tool when a word is ' +
  'unknown, and never invent definitions. Keep every answer on one line.';

/** One chat call; vLLM-only keys (chat_template_kwargs, include_reasoning, ...) go in `body` as they are. */
export async function chatTurn(
  client: OpenAI,
  body: Record<string, unknown>,
  options: { readonly stream: boolean; readonly signal?: AbortSignal },
): Promise<AgentTurn> {
  const requestOptions = options.signal ? { signal: options.signal } : {};
  if (!options.stream) {
    const answer = (await client.chat.completions.create(
      { ...body, stream: false } as never,
      requestOptions,
    )) as OpenAI.ChatCompletion;
    const choice = answer.choices[0];
    return {
      id: answer.id,
      content: choice?.message.content ?? '',
      toolCalls: (choice?.message.tool_calls ?? []).flatMap((c) =>
        c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
      ),
      finishReason: choice?.finish_reason ?? null,
    };
  }
  const stream = (await client.chat.completions.create(
    { ...body, stream: true } as never,
    requestOptions,
  )) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
  let id = '';
  let content = '';
  let finishReason: string | null = null;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  for await (const chunk of stream) {
    id ||= chunk.id;
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? '';
    for (const tc of choice.delta.tool_calls ?? []) {
      calls[tc.index] ??= { id: '', name: '', arguments: '' };
      const call = calls[tc.index]!;
      call.id ||= tc.id ?? '';
      call.name += tc.function?.name ?? '';
      call.arguments += tc.function?.arguments ?? '';
    }
    finishReason = choice.finish_reason ?? finishReason;
  }
  return { id, content, toolCalls: calls, finishReason };
}

export interface AgentOptions {
  readonly model: string;
  readonly stream: boolean;
  readonly question: string;
  /** Merged into every request body (sampling parameters, vLLM keys). */
  readonly extra?: Record<string, unknown>;
  readonly signal?: AbortSignal;
}

type Message = Record<string, unknown>;

/** Appends an answer to the history the way an agent loop does: the assistant turn, then its tool results. */
function carryOn(messages: Message[], turn: AgentTurn, followUp: string): void {
  if (turn.toolCalls.length === 0) {
    messages.push({ role: 'assistant', content: turn.content }, { role: 'user', content: followUp });
    return;
  }
  messages.push({
    role: 'assistant',
    content: turn.content === '' ? null : turn.content,
    tool_calls: turn.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    })),
  });
  for (const c of turn.toolCalls) {
    messages.push({
      role: 'tool',
      tool_call_id: c.id,
      content: `${c.name}: a small word of ${c.arguments.length} bytes`,
    });
  }
}

/** A tool-using agent: asks, runs the tool the model called, and asks again with the tool's answer. */
export async function toolAgent(client: OpenAI, options: AgentOptions): Promise<AgentTurn[]> {
  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: options.question },
  ];
  const body = () => ({ model: options.model, messages, tools: [LOOKUP_TOOL], ...options.extra });
  const send = () =>
    chatTurn(client, body(), { stream: options.stream, ...(options.signal ? { signal: options.signal } : {}) });
  const first = await send();
  carryOn(messages, first, 'Thanks. Anything else?');
  const second = await send();
  return [first, second];
}

/** A chat agent of `turns` turns, each a follow-up question on the history so far. */
export async function chatAgent(
  client: OpenAI,
  options: AgentOptions & { readonly turns: number },
): Promise<AgentTurn[]> {
  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: options.question },
  ];
  const turns: AgentTurn[] = [];
  for (let i = 0; i < options.turns; i++) {
    const turn = await chatTurn(
      client,
      { model: options.model, messages, ...options.extra },
      { stream: options.stream, ...(options.signal ? { signal: options.signal } : {}) },
    );
    turns.push(turn);
    if (i + 1 < options.turns) carryOn(messages, turn, `Follow-up ${i + 1}: and the next word?`);
  }
  return turns;
}
