// A multi-turn, tool-using agent with reasoning, on the official openai SDK, and the engine-twin "model" it talks
// to (qwen3 mode). The model's answer depends only on the conversation's state (which user query, how many tool
// results since it), read from the rendered prompt text, so a chat call and a token-in completion of the same
// conversation sample the same tokens whatever the history looks like in ids. The benchmark
// (bench/trajectories.ts) and the faithful-history tests share both.
import type OpenAI from 'openai';
import type { MockReplyObject, MockRespond } from '../servers/mock-vllm.js';
import { renderOutput } from '../servers/twin/respond.js';

export const TOOL_NAME = 'search';

export const AGENT_TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: TOOL_NAME,
      description: 'Search the knowledge base',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' }, step: { type: 'integer' }, options: { type: 'object' } },
        required: ['query'],
      },
    },
  },
];

/** What the conversation looks like to the model at generation time. */
interface PromptState {
  /** 1-based index of the current user query. */
  readonly query: number;
  readonly queryText: string;
  /** Tool results since that query. */
  readonly toolResults: number;
  /** The prompt closed the think block itself (enable_thinking=false). */
  readonly thinkingOff: boolean;
}

/** Reads the state from a Qwen3-rendered prompt (`<|im_start|>role\n...<|im_end|>` blocks). */
function promptState(text: string): PromptState {
  let query = 0;
  let queryText = '';
  let toolResults = 0;
  for (const block of text.split('<|im_start|>').slice(1)) {
    const newline = block.indexOf('\n');
    const role = block.slice(0, newline);
    const body = block.slice(newline + 1).replace(/<\|im_end\|>\n?$/, '');
    if (role !== 'user') continue;
    if (body.startsWith('<tool_response>')) {
      toolResults += body.split('<tool_response>').length - 1;
      continue;
    }
    query += 1;
    queryText = body;
    toolResults = 0;
  }
  return { query, queryText, toolResults, thinkingOff: text.endsWith('<think>\n\n</think>\n\n') };
}

export interface ToolLoopModelOptions {
  /** Tool calls the model makes per user query before it answers (default 3). */
  readonly toolCallsPerQuery?: number;
}

/** The answer for a state: reasoning always, then a tool call (some with content before it) or the final answer. */
function replyFor(state: PromptState, toolCallsPerQuery: number): MockReplyObject {
  const q = state.query;
  const step = state.toolResults + 1;
  const topic = state.queryText.slice(0, 40);
  if (state.toolResults < toolCallsPerQuery) {
    const args = { query: `${topic} (part ${step})`, step, options: { limit: 3, lang: 'en' } };
    return {
      reasoning: `Query ${q}, step ${step}: I need more facts about "${topic}", so I will search.`,
      // Every third call the model writes compact JSON; the template re-serialises arguments with tojson.
      toolCalls: [{ name: TOOL_NAME, arguments: step % 3 === 2 ? JSON.stringify(args) : args }],
      ...(step % 2 === 0 ? { content: 'Let me look a bit further.' } : {}),
    };
  }
  return {
    reasoning: `Query ${q}: ${state.toolResults} results are enough to answer.`,
    content: `Answer ${q}: "${topic}" is covered by ${state.toolResults} results.`,
  };
}

/**
 * A respond() for `startEngineTwin({ tokenizer: 'qwen3', reasoning: true })`. Chat prompts get the structured
 * reply (the twin writes it as hermes text with its think block); token-in completions get the same raw text.
 */
export function toolLoopModel(options: ToolLoopModelOptions = {}): MockRespond {
  const perQuery = options.toolCallsPerQuery ?? 3;
  return (prompt) => {
    const state = promptState(prompt.text);
    const reply = replyFor(state, perQuery);
    if (prompt.endpoint !== 'completions') return reply;
    const reasoning = state.thinkingOff ? null : (reply.reasoning ?? null);
    return { content: renderOutput(reply, { style: 'hermes', reasoning }).text };
  };
}

/** How the agent keeps its own turns: the message as it came (reasoning included), or rebuilt without reasoning. */
export type HistoryStyle = 'message' | 'rebuild';

export interface AgentTurn {
  readonly content: string | null;
  readonly reasoning: string | null;
  readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>;
  readonly finishReason: string | null;
}

export interface RunToolAgentOptions {
  readonly client: OpenAI;
  readonly model: string;
  readonly stream: boolean;
  readonly history: HistoryStyle;
  /** The first user message; the follow-ups are derived from it. */
  readonly task: string;
  /** User queries in the conversation (default 2). */
  readonly queries?: number;
  /** Safety bound on model calls (default 32). */
  readonly maxCalls?: number;
  /** Extra body keys (vLLM's, e.g. chat_template_kwargs). */
  readonly extraBody?: Readonly<Record<string, unknown>>;
}

type Message = OpenAI.Chat.ChatCompletionMessageParam;
type Loose = Record<string, unknown>;

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

async function oneTurn(
  options: RunToolAgentOptions,
  messages: readonly Message[],
): Promise<AgentTurn & { id: string }> {
  const body = {
    model: options.model,
    messages: [...messages],
    tools: AGENT_TOOLS,
    temperature: 1,
    ...options.extraBody,
  };
  if (!options.stream) {
    const res = await options.client.chat.completions.create({ ...body, stream: false } as never);
    const completion = res as unknown as OpenAI.ChatCompletion;
    const choice = completion.choices[0];
    const message = (choice?.message ?? {}) as unknown as Loose;
    const calls = Array.isArray(message.tool_calls)
      ? (message.tool_calls as OpenAI.ChatCompletionMessageToolCall[])
      : [];
    return {
      id: completion.id,
      content: text(message.content),
      reasoning: text(message.reasoning ?? message.reasoning_content),
      toolCalls: calls.map((c) => ({
        name: c.type === 'function' ? c.function.name : '',
        arguments: c.type === 'function' ? c.function.arguments : '',
      })),
      finishReason: choice?.finish_reason ?? null,
    };
  }
  const events = (await options.client.chat.completions.create({
    ...body,
    stream: true,
  } as never)) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
  let id = '';
  let content: string | null = null;
  let reasoning: string | null = null;
  let finishReason: string | null = null;
  const calls: { name: string; arguments: string }[] = [];
  for await (const event of events) {
    id ||= event.id;
    for (const choice of event.choices) {
      const delta = choice.delta as unknown as Loose;
      const piece = text(delta.content);
      if (piece !== null) content = (content ?? '') + piece;
      const thought = text(delta.reasoning ?? delta.reasoning_content);
      if (thought !== null) reasoning = (reasoning ?? '') + thought;
      for (const call of choice.delta.tool_calls ?? []) {
        const slot = calls[call.index] ?? { name: '', arguments: '' };
        calls[call.index] = slot;
        slot.name += call.function?.name ?? '';
        slot.arguments += call.function?.arguments ?? '';
      }
      finishReason = choice.finish_reason ?? finishReason;
    }
  }
  // vLLM streams the first content piece as "" on the role chunk: an answer with none stays null.
  return { id, content: content === '' ? null : content, reasoning, toolCalls: calls, finishReason };
}

function assistantMessage(turn: AgentTurn, options: { history: HistoryStyle; callIds: string[] }): Message {
  const message: Loose = { role: 'assistant', content: turn.content };
  if (turn.toolCalls.length > 0) {
    message.tool_calls = turn.toolCalls.map((c, i) => ({
      id: options.callIds[i],
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  if (options.history === 'message' && turn.reasoning !== null) message.reasoning = turn.reasoning;
  return message as unknown as Message;
}

export interface AgentRun {
  readonly turns: AgentTurn[];
  /** The response ids the agent got, in call order. */
  readonly responseIds: string[];
}

/** Runs the conversation: every query is answered after the model's tool calls, each executed by the agent. */
export async function runToolAgent(options: RunToolAgentOptions): Promise<AgentRun> {
  const queries = options.queries ?? 2;
  const maxCalls = options.maxCalls ?? 32;
  const messages: Message[] = [
    { role: 'system', content: 'You are a research assistant. Use the search tool before answering.' },
    { role: 'user', content: options.task },
  ];
  const turns: AgentTurn[] = [];
  const responseIds: string[] = [];
  let asked = 1;
  let toolCounter = 0;
  while (turns.length < maxCalls) {
    const { id, ...turn } = await oneTurn(options, messages);
    turns.push(turn);
    responseIds.push(id);
    const callIds = turn.toolCalls.map((_, i) => `call_${toolCounter + i + 1}`);
    toolCounter += callIds.length;
    messages.push(assistantMessage(turn, { history: options.history, callIds }));
    if (turn.toolCalls.length > 0) {
      turn.toolCalls.forEach((call, i) => {
        messages.push({
          role: 'tool',
          tool_call_id: callIds[i] ?? '',
          content: JSON.stringify({ hits: [`${call.name} hit for ${call.arguments.length} chars`], ok: true }),
        });
      });
      continue;
    }
    if (asked >= queries) break;
    asked += 1;
    messages.push({ role: 'user', content: `Follow-up ${asked} on "${options.task}": what else?` });
  }
  return { turns, responseIds };
}
