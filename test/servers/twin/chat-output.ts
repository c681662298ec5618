// What the chat route makes of generated text: vLLM's composition of the reasoning parser and the tool parser,
// for whole answers (the non-stream message) and chunk by chunk (stream deltas).
import type { DeltaMessage, ReasoningParser } from './reasoning-parser.js';
import type { ToolCallOut, ToolParser, ToolStreamer } from './tool-parser.js';
import type { ReasoningField } from './types.js';

export interface ChatParsing {
  /** `chars`: the stand-in's historical message shape; `vllm`: current vLLM's. */
  shape: 'chars' | 'vllm';
  reasoning: ReasoningParser | null;
  tools: ToolParser | null;
  /** include_reasoning (default true): false drops reasoning from the answer. */
  includeReasoning: boolean;
  /** The prompt already closed the think block (chat_template_kwargs enable_thinking=false). */
  promptEndsReasoning: boolean;
  reasoningField: ReasoningField;
}

export interface ParsedAnswer {
  reasoning: string | null;
  content: string | null;
  toolCalls: ToolCallOut[];
}

/** The non-stream answer: reasoning split off first, then tool calls extracted from the content. */
export function parseAnswer(text: string, parsing: ChatParsing): ParsedAnswer {
  let reasoning: string | null = null;
  let content: string | null = text;
  if (parsing.reasoning && !parsing.promptEndsReasoning) {
    ({ reasoning, content } = parsing.reasoning.extract(text));
  }
  if (!parsing.includeReasoning) reasoning = null;
  let toolCalls: ToolCallOut[] = [];
  if (parsing.tools && content !== null) {
    const parsed = parsing.tools.extract(content);
    if (parsed) ({ toolCalls, content } = parsed);
  }
  return { reasoning, content, toolCalls };
}

/** Puts reasoning under the configured field name(s). */
function withReasoning(
  target: Record<string, unknown>,
  reasoning: string | null | undefined,
  field: ReasoningField,
): Record<string, unknown> {
  if (reasoning === undefined) return target;
  if (field === 'reasoning' || field === 'both') target.reasoning = reasoning;
  if (field === 'reasoning_content' || field === 'both') target.reasoning_content = reasoning;
  return target;
}

export function chatMessage(answer: ParsedAnswer, parsing: ChatParsing): Record<string, unknown> {
  const toolCalls = answer.toolCalls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: answer.content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
  };
  if (parsing.shape === 'chars') {
    message.tool_calls = toolCalls;
    message.reasoning_content = null;
    return message;
  }
  // Current vLLM drops an empty tool_calls list from the message.
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return withReasoning(message, answer.reasoning, parsing.reasoningField);
}

/** A stream delta as it goes on the wire. */
export function wireDelta(delta: DeltaMessage, field: ReasoningField): Record<string, unknown> {
  const { reasoning, ...rest } = delta;
  return withReasoning({ ...rest }, reasoning, field);
}

/**
 * Stream state of one choice: feeds each chunk's text and ids through the parsers the way vLLM's chat stream
 * generator does, so a chunk whose tokens a parser buffers yields null (sent as an empty delta with its ids).
 */
export class ChatDeltaState {
  private previousText = '';
  private previousIds: number[] = [];
  private reasoningEnded: boolean;
  private addedContent = false;
  private first = true;
  private readonly streamer: ToolStreamer | null;

  constructor(private readonly parsing: ChatParsing) {
    this.reasoningEnded = parsing.promptEndsReasoning;
    this.streamer = parsing.tools ? parsing.tools.streamer() : null;
  }

  get toolsCalled(): boolean {
    return this.streamer?.called ?? false;
  }

  next(deltaText: string, deltaIds: readonly number[]): DeltaMessage | null {
    const { reasoning } = this.parsing;
    // qwen3: an answer that does not open with <think> has no reasoning (see reasoning-parser.ts).
    if (this.first && reasoning?.name === 'qwen3' && deltaIds.length > 0 && deltaIds[0] !== reasoning.startId) {
      this.reasoningEnded = true;
    }
    this.first = false;
    let delta = this.compose(deltaText, deltaIds);
    if (delta && !this.parsing.includeReasoning && delta.reasoning !== undefined) {
      const { reasoning: _dropped, ...rest } = delta;
      delta = Object.keys(rest).length > 0 ? rest : null;
    }
    return delta;
  }

  private compose(deltaText: string, deltaIds: readonly number[]): DeltaMessage | null {
    const { reasoning } = this.parsing;
    const streamer = this.streamer;
    let currentText = this.previousText + deltaText;
    let currentIds = [...this.previousIds, ...deltaIds];
    let delta: DeltaMessage | null = null;
    if (streamer && reasoning) {
      if (!this.reasoningEnded) {
        delta = reasoning.stream({ previousIds: this.previousIds, deltaIds, deltaText });
        if (reasoning.isEnd(deltaIds)) {
          this.reasoningEnded = true;
          currentIds = reasoning.contentIds([...deltaIds]);
          if (delta?.content) {
            currentText = delta.content;
            delta.content = undefined;
          } else {
            currentText = '';
          }
        }
      }
      if (this.reasoningEnded) {
        // From here on the tool parser sees only the content (vLLM restarts its text at the reasoning end).
        if (!this.addedContent) this.addedContent = true;
        delta = streamer.next(currentText);
      }
    } else if (streamer) {
      delta = streamer.next(currentText);
    } else if (reasoning && !this.reasoningEnded) {
      delta = reasoning.stream({ previousIds: this.previousIds, deltaIds, deltaText });
    } else {
      delta = deltaText ? { content: deltaText } : null;
    }
    this.previousText = currentText;
    this.previousIds = currentIds;
    return delta;
  }
}
