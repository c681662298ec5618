// The twin's "model": respond() decides what a choice answers (text, tool calls, reasoning) under given weights;
// renderOutput() writes that answer as the raw text a real model would generate for the chosen tool-call format.
import { contentText, type MockChatMessage, renderToolCall } from './chat-template.js';
import type { MockReply, MockReplyObject, MockRespond, TwinWeights } from './types.js';
import { fnv1a, isRecord, mix, pyJson } from './util.js';

function lastMessageOf(messages: readonly MockChatMessage[] | undefined, role?: string): MockChatMessage | undefined {
  if (!messages) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (role === undefined || m.role === role) return m;
  }
  return undefined;
}

/** What makes an answer depend on the weights: nothing for the weights a twin starts with (so output is stable). */
export function weightsSalt(weights: TwinWeights): string {
  return weights.base === 0 && weights.lora === null && !weights.discarded ? '' : `@${weights.key}`;
}

/**
 * Chat: `mock-<hash>: <last user text>`; with tools, a last message from the user, and tool_choice not "none",
 * it calls the first tool (or the forced one) with `{"request": <last user text>, "nonce": <hash>}`.
 * Completions: ` mock-<hash> continues: <last 24 characters of the prompt>`.
 * The hash covers the prompt text, the choice index and the weights, so n>1 choices differ and so do the answers
 * of different weights.
 */
export const defaultRespond: MockRespond = (prompt, ctx) => {
  const hash = fnv1a(`${prompt.text}#${ctx.choiceIndex}${weightsSalt(ctx.weights)}`)
    .toString(16)
    .padStart(8, '0');
  if (prompt.endpoint === 'completions') {
    return ` mock-${hash} continues: ${Array.from(prompt.text).slice(-24).join('')}`;
  }
  const userText = contentText(lastMessageOf(prompt.messages, 'user')?.content);
  const last = lastMessageOf(prompt.messages);
  const choice = ctx.body.tool_choice;
  if (ctx.tools.length > 0 && last?.role === 'user' && choice !== 'none') {
    let toolName: string | undefined;
    if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') {
      toolName = choice.function.name;
    } else if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') {
      // The Responses API names the forced function at the top level.
      toolName = choice.name;
    } else {
      const first = ctx.tools[0];
      if (isRecord(first) && isRecord(first.function) && typeof first.function.name === 'string') {
        toolName = first.function.name;
      }
    }
    if (toolName) return { toolCalls: [{ name: toolName, arguments: { request: userText, nonce: hash } }] };
  }
  return `mock-${hash}: ${userText}`;
};

/** The reasoning a thinking answer gets when respond() gave none. */
export function defaultReasoning(prompt: { text: string; messages?: MockChatMessage[] }, choiceIndex: number): string {
  const userText = contentText(lastMessageOf(prompt.messages, 'user')?.content);
  const hash = fnv1a(`think:${prompt.text}#${choiceIndex}`).toString(16).padStart(8, '0');
  return `The user wrote "${userText}". Plan ${hash}: answer briefly.`;
}

export interface RenderedOutput {
  /** The raw generated text (before the EOS token). */
  text: string;
  /** chars mode: the reply's tool-call ids by index. */
  toolIds: (string | undefined)[];
}

export function replyObject(reply: MockReply): MockReplyObject {
  return typeof reply === 'string' ? { content: reply } : reply;
}

/**
 * hermes: optional `<think>\n{reasoning}\n</think>\n\n`, then the content, then one
 * `<tool_call>\n{"name": N, "arguments": A}\n</tool_call>` per call (separated like the Qwen3 template renders an
 * assistant turn); A is Python-style JSON for an object, verbatim for a string.
 * chars: the content, then `<tool_call>{"name":N,"arguments":A}</tool_call>` blocks (A = JSON.stringify or verbatim).
 */
export function renderOutput(
  reply: MockReplyObject,
  options: { style: 'hermes' | 'chars'; reasoning: string | null },
): RenderedOutput {
  const content = reply.content ?? '';
  const calls = reply.toolCalls ?? [];
  if (options.style === 'chars') {
    let text = content;
    for (const c of calls) {
      text += renderToolCall(c.name, typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments));
    }
    return { text, toolIds: calls.map((c) => c.id) };
  }
  let text = options.reasoning !== null ? `<think>\n${options.reasoning}\n</think>\n\n` : '';
  text += content;
  calls.forEach((c, i) => {
    if (i > 0 || content) text += '\n';
    const args = typeof c.arguments === 'string' ? c.arguments : pyJson(c.arguments);
    text += `<tool_call>\n{"name": ${JSON.stringify(c.name)}, "arguments": ${args}}\n</tool_call>`;
  });
  return { text, toolIds: [] };
}

/** The deterministic logprob of token `id` at position `position` (the stand-in's prompt_logprobs): in [-2, -0.001]. */
export function tokenLogprob(id: number, position: number): number {
  return -((mix(id, position) % 2000) + 1) / 1000;
}
