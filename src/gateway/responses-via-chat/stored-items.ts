// Stateful Responses clients under `via-chat` (docs/harnesses.md#stored-responses): `previous_response_id` and
// `item_reference` input items name earlier answers of the same rollout attempt, and are resolved from what the
// gateway recorded of them, the attempt's spans in the store. Nothing is kept in memory, so a reference works
// after a restart and on any replica that shares the store. A call's span holds the chat call the engine served:
// its input messages (earlier turns' reasoning included) and its answer, from which the answer's output items are
// rebuilt with the ids the agent was given (response.ts numbers them by their place in the answer).
//
// - An `item_reference` becomes the output item it names, as if the agent had sent the item itself.
// - `previous_response_id` carries that call's conversation as the engine saw it, followed by its output items,
//   before the new input. The new call's `instructions` replace the carried conversation's leading system message
//   (the earlier call's instructions), so a chain of calls that repeat their instructions keeps one copy.
// A reference that is not an answer of this attempt (unknown, another attempt's, a call recorded without content,
// an aborted generation) is a 400 that says how to do without it: nothing is guessed.

import * as A from '../../contracts/span-attributes.js';
import { readStoredCall } from '../../contracts/stored-call.js';
import { GatewayError } from '../../errors.js';
import type { Span } from '../../store/core/types.js';
import { isObj, type Obj } from '../history/narrow.js';
import type { StoredState } from './request.js';
import { functionCallItem, itemId, messageItem, reasoningItem, responseId } from './response.js';

/** The rollout attempt a call is attributed to, whose recorded answers its references may name. */
export interface StoredAttempt {
  readonly rid: string;
  readonly aid: string;
}

/** The recorded spans of one attempt (the store's `querySpans`). */
export type AttemptSpans = (attempt: StoredAttempt) => Promise<readonly Span[]>;

function isReference(item: unknown): item is Obj {
  return isObj(item) && item.type === 'item_reference';
}

/** Whether the request names earlier answers (only then is the store read). */
export function hasStoredReferences(body: Readonly<Obj>): boolean {
  const previous = body.previous_response_id;
  return (previous !== undefined && previous !== null) || (Array.isArray(body.input) && body.input.some(isReference));
}

function refuse(message: string, param: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

/** How to do without stored answers, for every refusal below. */
const REMEDY =
  'Send the whole history instead (the output items themselves, with store: false), or call under ' +
  '/rollout/<rollout_id>/attempt/<attempt_id>/v1 with tracing.captureContent on, so that answers are recorded';

function jsonArray(value: unknown): unknown[] | null {
  if (typeof value !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** GenAI tool-call arguments (an object when they parsed) as the JSON text chat carries. */
function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? {});
}

/** One recorded Responses answer: its span's input messages and its output items, by the ids the agent got. */
interface RecordedAnswer {
  readonly inputMessages: unknown[];
  readonly items: ReadonlyMap<string, Obj>;
}

/** The output items of a call's answer, rebuilt from its recorded output message in the answer's order and ids. */
function outputItems(id: string, message: unknown): Map<string, Obj> {
  const items = new Map<string, Obj>();
  const parts = isObj(message) && Array.isArray(message.parts) ? message.parts : [];
  const add = (item: Obj) => items.set(String(item.id), item);
  const part = (type: string) => parts.find((p): p is Obj => isObj(p) && p.type === type);
  // The answer's order: reasoning, the message, then one function call per tool call (response.ts).
  const reasoning = part('reasoning');
  if (typeof reasoning?.content === 'string' && reasoning.content !== '') {
    add(reasoningItem({ id: itemId('rs', id, items.size), text: reasoning.content, status: 'completed' }));
  }
  const text = part('text');
  if (typeof text?.content === 'string' && text.content !== '') {
    add(messageItem({ id: itemId('msg', id, items.size), text: text.content, status: 'completed' }));
  }
  for (const call of parts) {
    if (!isObj(call) || call.type !== 'tool_call') continue;
    add(
      functionCallItem({
        id: itemId('fc', id, items.size),
        callId: typeof call.id === 'string' ? call.id : '',
        // The chat name, namespaced functions included: the translation sends it to the engine as it is.
        chatName: typeof call.name === 'string' ? call.name : '',
        arguments: argumentsText(call.arguments),
        status: 'completed',
        namespaced: new Map(),
      }),
    );
  }
  return items;
}

/** An output item's id names its response: `<kind>_<x>_<index>` belongs to `resp_<x>` (response.ts's `itemId`). */
const ITEM_ID = /^(?:rs|msg|fc)_(.*)_\d+$/;

/**
 * The attempt's recorded Responses answers, looked up by response id. Only the span that matches is decoded: an
 * attempt holds many calls, and a reference names one or two of them.
 */
class RecordedAnswers {
  readonly #spans: readonly Span[];
  readonly #found = new Map<string, RecordedAnswer | null>();

  constructor(spans: readonly Span[]) {
    this.#spans = spans;
  }

  /** The answer with this response id, if it is one the agent got whole and was recorded with its content. */
  get(id: string): RecordedAnswer | undefined {
    let answer = this.#found.get(id);
    if (answer === undefined) {
      answer = this.#read(id);
      this.#found.set(id, answer);
    }
    return answer ?? undefined;
  }

  /** The output item with this id. */
  item(id: string): Obj | undefined {
    const match = ITEM_ID.exec(id);
    return match === null ? undefined : this.get(`resp_${match[1]}`)?.items.get(id);
  }

  #read(id: string): RecordedAnswer | null {
    // The latest call with the id wins (an engine does not repeat ids; a retried call would be the later one).
    for (let i = this.#spans.length - 1; i >= 0; i--) {
      const call = readStoredCall((this.#spans[i] as Span).attributes);
      if (call.api !== A.API_VALUE_OPENAI_RESPONSES) continue;
      if (call.responseId === null || responseId(call.responseId) !== id) continue;
      // An aborted generation reached the agent as an error, never as an answer it could refer to.
      if (call.outcome === A.CALL_OUTCOME_VALUE_ABORTED) return null;
      const inputMessages = jsonArray(call.inputMessages);
      const outputMessages = jsonArray(call.outputMessages);
      if (inputMessages === null || outputMessages === null) return null;
      return { inputMessages, items: outputItems(id, outputMessages[0]) };
    }
    return null;
  }
}

/** As the translation writes chat content: one text part as a string, several as parts, none as null beside calls. */
function chatContent(parts: readonly Obj[], hasToolCalls: boolean): unknown {
  const only = parts[0];
  if (parts.length === 1 && only?.type === 'text') return only.text;
  if (parts.length > 0) return [...parts];
  return hasToolCalls ? null : '';
}

/** A recorded GenAI message as the chat message it was recorded from. */
function chatMessage(message: unknown): Obj | null {
  if (!isObj(message) || typeof message.role !== 'string' || !Array.isArray(message.parts)) return null;
  const parts = message.parts.filter(isObj);
  if (message.role === 'tool') {
    const response = parts.find((p) => p.type === 'tool_call_response');
    return { role: 'tool', tool_call_id: response?.id ?? null, content: response?.result ?? '' };
  }
  const content: Obj[] = [];
  const toolCalls: Obj[] = [];
  let reasoning: string | null = null;
  for (const part of parts) {
    if (part.type === 'text') content.push({ type: 'text', text: part.content });
    else if (part.type === 'reasoning' && typeof part.content === 'string') reasoning = part.content;
    else if (part.type === 'tool_call') {
      toolCalls.push({
        id: part.id,
        type: 'function',
        function: { name: part.name, arguments: argumentsText(part.arguments) },
      });
    } else content.push(part);
  }
  const chat: Obj = { role: message.role, content: chatContent(content, toolCalls.length > 0) };
  if (toolCalls.length > 0) chat.tool_calls = toolCalls;
  if (reasoning !== null) chat.reasoning = reasoning;
  return chat;
}

function previousConversation(options: { body: Readonly<Obj>; answer: RecordedAnswer }): Obj[] {
  const messages = options.answer.inputMessages.map(chatMessage).filter((m): m is Obj => m !== null);
  const newInstructions = options.body.instructions !== undefined && options.body.instructions !== null;
  if (newInstructions && messages[0]?.role === 'system') messages.shift();
  return messages;
}

/**
 * What the request's references stand for, read from the attempt's recorded spans. Null when it has none (the
 * store is not read then).
 */
export async function resolveStoredState(options: {
  readonly body: Readonly<Obj>;
  readonly attempt: StoredAttempt | null;
  readonly spans: AttemptSpans;
}): Promise<StoredState | null> {
  const { body, attempt } = options;
  if (!hasStoredReferences(body)) return null;
  const previous = body.previous_response_id;
  const param = previous !== undefined && previous !== null ? 'previous_response_id' : 'input';
  if (attempt === null) {
    refuse(
      `${param}: stored responses are resolved within a rollout attempt, and this call has none. ${REMEDY}`,
      param,
    );
  }
  const answers = new RecordedAnswers(await options.spans(attempt));
  const where = `rollout '${attempt.rid}', attempt '${attempt.aid}'`;
  let carried: readonly Obj[] = [];
  const input: unknown[] = [];
  if (previous !== undefined && previous !== null) {
    if (typeof previous !== 'string') refuse('previous_response_id: Input should be a string', 'previous_response_id');
    const answer = answers.get(previous);
    if (answer === undefined) {
      refuse(
        `previous_response_id: '${previous}' is not a recorded response of ${where}. ${REMEDY}`,
        'previous_response_id',
      );
    }
    carried = previousConversation({ body, answer });
    input.push(...answer.items.values());
  }
  const own = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  if (Array.isArray(own)) {
    own.forEach((item: unknown, i) => {
      if (!isReference(item)) {
        input.push(item);
        return;
      }
      const id = item.id;
      const found = typeof id === 'string' ? answers.item(id) : undefined;
      if (found === undefined) {
        refuse(
          `input.${i}: item '${String(id)}' is not an output item of a recorded response of ${where}. ${REMEDY}`,
          `input.${i}.id`,
        );
      }
      input.push(found);
    });
  }
  return { carried, input };
}
