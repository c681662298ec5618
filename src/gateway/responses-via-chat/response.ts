// The engine's chat answer as a Responses object: the parts both answer shapes (JSON body, stream) share, and the
// whole-body translation. Output items come in the order the model produced them: a `reasoning` item (vLLM's
// parsed reasoning), a `message` with one `output_text` part, then one `function_call` per tool call.

import { isObj, type Obj } from '../history/narrow.js';
import { FINISH_REASON_ABORT, reasoningOf } from '../stream/chat-choice-reader.js';
import type { NamespacedName, ResponsesEcho } from './request.js';

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseStatus = 'completed' | 'incomplete' | 'failed' | 'in_progress';

/** What the answer needs from the request: the echoed parameters and the namespaced tool names. */
export interface AnswerContext {
  readonly echo: ResponsesEcho;
  readonly namespaced: ReadonlyMap<string, NamespacedName>;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** `chatcmpl-<x>` becomes `resp_<x>`: the span's response id and the agent's response id stay matchable. */
export function responseId(chatId: unknown): string {
  const id = typeof chatId === 'string' ? chatId : '';
  return `resp_${id.startsWith('chatcmpl-') ? id.slice('chatcmpl-'.length) : id}`;
}

/** Item ids follow from the response id and the item's place, so an answer's ids are stable and unique. */
export function itemId(kind: 'rs' | 'msg' | 'fc', response: string, index: number): string {
  return `${kind}_${response.slice('resp_'.length)}_${index}`;
}

/** OpenAI's input tokens include the cached ones (unlike Anthropic's); chat usage is the same notion. */
export function responsesUsage(
  usage: unknown,
  fallback: { readonly promptTokens: number; readonly outputTokens: number },
): ResponsesUsage {
  const source = isObj(usage) ? usage : null;
  const input = source === null ? fallback.promptTokens : count(source.prompt_tokens);
  const output = source === null ? fallback.outputTokens : count(source.completion_tokens);
  const promptDetails = isObj(source?.prompt_tokens_details) ? source.prompt_tokens_details : null;
  const outputDetails = isObj(source?.completion_tokens_details) ? source.completion_tokens_details : null;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(promptDetails?.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(outputDetails?.reasoning_tokens) },
    total_tokens: input + output,
  };
}

export interface FinalStatus {
  readonly status: 'completed' | 'incomplete';
  readonly incompleteDetails: { reason: string } | null;
}

/** Chat finish reasons as a Responses status: a cut generation is `incomplete`, as OpenAI reports it. */
export function finalStatus(finishReason: unknown): FinalStatus {
  if (finishReason === 'length') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') {
    return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } };
  }
  return { status: 'completed', incompleteDetails: null };
}

export function reasoningItem(options: { id: string; text: string; status: string }): Obj {
  return {
    id: options.id,
    type: 'reasoning',
    summary: [],
    content: [{ type: 'reasoning_text', text: options.text }],
    status: options.status,
  };
}

export function outputTextPart(text: string): Obj {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

export function messageItem(options: { id: string; text: string; status: string }): Obj {
  return {
    id: options.id,
    type: 'message',
    role: 'assistant',
    status: options.status,
    content: options.text === '' && options.status === 'in_progress' ? [] : [outputTextPart(options.text)],
  };
}

export function functionCallItem(options: {
  readonly id: string;
  readonly callId: string;
  readonly chatName: string;
  readonly arguments: string;
  readonly status: string;
  readonly namespaced: ReadonlyMap<string, NamespacedName>;
}): Obj {
  const named = options.namespaced.get(options.chatName);
  const item: Obj = {
    id: options.id,
    type: 'function_call',
    status: options.status,
    call_id: options.callId,
    name: named?.name ?? options.chatName,
    arguments: options.arguments,
  };
  if (named !== undefined) item.namespace = named.namespace;
  return item;
}

export interface ResponseParts {
  readonly id: string;
  readonly createdAt: number;
  readonly model: string;
  readonly status: ResponseStatus;
  readonly incompleteDetails: { reason: string } | null;
  readonly error: { code: string; message: string } | null;
  readonly output: readonly Obj[];
  readonly usage: ResponsesUsage | null;
}

/** The Responses object: the answer's parts and the request's parameters, as OpenAI's repeats them. */
export function responseObject(parts: ResponseParts, context: AnswerContext): Obj {
  const { echo } = context;
  return {
    id: parts.id,
    object: 'response',
    created_at: parts.createdAt,
    status: parts.status,
    error: parts.error,
    incomplete_details: parts.incompleteDetails,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    model: parts.model,
    output: parts.output,
    parallel_tool_calls: echo.parallelToolCalls,
    previous_response_id: echo.previousResponseId,
    reasoning: echo.reasoning,
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_p: echo.topP,
    truncation: echo.truncation,
    usage: parts.usage,
    metadata: echo.metadata,
  };
}

export function createdAt(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : Math.floor(Date.now() / 1000);
}

export type ChatAnswer = { readonly aborted: true } | { readonly aborted: false; readonly response: Obj };

/** A non-stream chat completion body as a Responses object (its first choice: Responses has no `n`). */
export function chatCompletionToResponse(completion: unknown, context: AnswerContext): ChatAnswer {
  const body = isObj(completion) ? completion : {};
  const choice = Array.isArray(body.choices) && isObj(body.choices[0]) ? body.choices[0] : {};
  if (choice.finish_reason === FINISH_REASON_ABORT) return { aborted: true };
  const message = isObj(choice.message) ? choice.message : {};
  const id = responseId(body.id);
  const output: Obj[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== null && reasoning !== '') {
    output.push(reasoningItem({ id: itemId('rs', id, output.length), text: reasoning, status: 'completed' }));
  }
  if (typeof message.content === 'string' && message.content !== '') {
    output.push(messageItem({ id: itemId('msg', id, output.length), text: message.content, status: 'completed' }));
  }
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObj(call)) continue;
      const fn = isObj(call.function) ? call.function : {};
      output.push(
        functionCallItem({
          id: itemId('fc', id, output.length),
          callId: typeof call.id === 'string' ? call.id : '',
          chatName: typeof fn.name === 'string' ? fn.name : '',
          arguments: typeof fn.arguments === 'string' ? fn.arguments : '',
          status: 'completed',
          namespaced: context.namespaced,
        }),
      );
    }
  }
  const final = finalStatus(choice.finish_reason);
  const promptIds = Array.isArray(body.prompt_token_ids) ? body.prompt_token_ids.length : 0;
  const outputIds = Array.isArray(choice.token_ids) ? choice.token_ids.length : 0;
  const response = responseObject(
    {
      id,
      createdAt: createdAt(body.created),
      model: typeof body.model === 'string' ? body.model : '',
      status: final.status,
      incompleteDetails: final.incompleteDetails,
      error: null,
      output,
      usage: responsesUsage(body.usage, { promptTokens: promptIds, outputTokens: outputIds }),
    },
    context,
  );
  return { aborted: false, response };
}
