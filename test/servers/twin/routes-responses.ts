// POST /v1/responses: the input becomes chat messages for the same template and respond(); the answer is one
// message item (text) and/or one function_call item per tool call. Streams are named SSE events with a
// sequence_number and no `[DONE]`. Reasoning is not turned into a reasoning item (not emulated).
// vLLM's extras (vllm/entrypoints/openai/responses: protocol.py, serving_responses.py, context.py, main of
// mid-2026): `enable_response_messages: true` adds `input_messages` / `output_messages`, each one
// `{type: "raw_message_tokens", message, tokens}` with the rendered prompt and its ids, and the generated text
// and every generated id (current main accumulates a stream's deltas into one entry, and its terminal
// `response.completed` event carries them too). `include: ["message.output_text.logprobs"]` puts the logprobs of
// every generated token on the output_text part (and each text delta's on its event). `background: true` is a
// 400 unless the server stores responses (VLLM_ENABLE_RESPONSES_API_STORE), which the twin does not.
import { ChatDeltaState, type ChatParsing, parseAnswer } from './chat-output.js';
import type { MockChatMessage } from './chat-template.js';
import type { RouteRequest, TwinContext } from './context.js';
import { optionalBool, optionalInt, VllmError } from './errors.js';
import { chatEntries, serialize } from './logprobs.js';
import { runNonStream, runStream, type StreamEvent } from './loops.js';
import { choicePlan } from './plan.js';
import { checkContext, checkModel } from './request.js';
import { logprobFormat, openJob } from './route-parts.js';
import { reasoningParserFor, sendNonStreamBody } from './routes-openai.js';
import { createToolParser } from './tool-parser.js';
import { hexId, isRecord } from './util.js';

function responsesText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    throw new VllmError(400, `1 validation error:\n  ${where}.content: Input should be a string or a list of parts`);
  }
  return content
    .map((part) => {
      if (
        isRecord(part) &&
        (part.type === 'input_text' || part.type === 'output_text') &&
        typeof part.text === 'string'
      ) {
        return part.text;
      }
      throw new VllmError(400, `1 validation error:\n  ${where}.content: only input_text and output_text parts`);
    })
    .join('');
}

/**
 * The chat messages a /v1/responses request renders as: `instructions` as a first system message, then the input.
 * Function calls join the assistant message before them (one assistant turn, as the generated answer rendered it),
 * so a next turn that replays the output keeps the prompt + response tokens as its prompt prefix (chars mode).
 */
export function responsesInputToMessages(body: Record<string, unknown>): MockChatMessage[] {
  const messages: MockChatMessage[] = [];
  const { instructions, input } = body;
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') {
      throw new VllmError(400, '1 validation error:\n  instructions: Input should be a valid string');
    }
    messages.push({ role: 'system', content: instructions });
  }
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  if (!Array.isArray(input) || input.length === 0) {
    throw new VllmError(400, '1 validation error:\n  input: Field required (a string or a non-empty list of items)');
  }
  input.forEach((item, i) => {
    const where = `input.${i}`;
    if (!isRecord(item)) throw new VllmError(400, `1 validation error:\n  ${where}: Input should be an object`);
    const type = item.type ?? 'message';
    if (type === 'message') {
      if (typeof item.role !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}.role: Field required`);
      }
      messages.push({ role: item.role, content: responsesText(item.content, where) });
    } else if (type === 'function_call') {
      if (typeof item.name !== 'string' || typeof item.arguments !== 'string' || typeof item.call_id !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}: function_call needs call_id, name and arguments`);
      }
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant') {
        last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call];
      } else {
        messages.push({ role: 'assistant', content: '', tool_calls: [call] });
      }
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}.call_id: Field required`);
      }
      const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: output });
    } else {
      throw new VllmError(400, `mock-vllm: unsupported input item type ${JSON.stringify(type)}`);
    }
  });
  return messages;
}

/** Responses tools `{type:"function", name, ...}` in the chat shape every respond() already reads. */
export function responsesToolsToChat(tools: unknown): unknown[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new VllmError(400, '1 validation error:\n  tools: Input should be a valid list');
  return tools.map((tool, i) => {
    if (!isRecord(tool) || tool.type !== 'function' || typeof tool.name !== 'string') {
      throw new VllmError(400, `mock-vllm: tools.${i} must be a function tool with a name`);
    }
    const { type: _type, ...fn } = tool;
    return { type: 'function', function: fn };
  });
}

interface CallOut {
  id: string;
  itemId: string;
  name: string;
  arguments: string;
}

export async function handleResponses(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const model = checkModel(ctx, body);
  const stream = optionalBool(body, 'stream') ?? false;
  const requestedMaxTokens = optionalInt(body, 'max_output_tokens', 1);
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    throw new VllmError(400, 'mock-vllm stores no responses: `previous_response_id` is not supported');
  }
  if (body.background === true) {
    throw new VllmError(
      400,
      body.store === false
        ? 'background can only be used when `store` is true'
        : 'This vLLM engine does not support `store=True` and therefore does not support the background mode. To enable these features, set the environment variable `VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM server.',
      'BadRequestError',
      'background',
    );
  }
  const enableMessages = optionalBool(body, 'enable_response_messages') ?? false;
  const include = Array.isArray(body.include) ? body.include : [];
  const withLogprobs = include.includes('message.output_text.logprobs');
  const topLogprobs = optionalInt(body, 'top_logprobs', 0) ?? 0;
  const chatMessages = responsesInputToMessages(body);
  const chatTools = responsesToolsToChat(body.tools);
  const toolChoice = body.tool_choice;
  if (toolChoice !== undefined && toolChoice !== null && toolChoice !== 'none' && chatTools.length === 0) {
    throw new VllmError(400, 'When using `tool_choice`, `tools` must be set.');
  }
  // vLLM's Responses request takes `chat_template_kwargs` as chat does (enable_thinking false closes the think block
  // in the prompt, measured on 0.32.0).
  const kwargs = isRecord(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  const enableThinking = typeof kwargs.enable_thinking === 'boolean' ? kwargs.enable_thinking : undefined;
  const promptText = ctx.template.render({
    messages: chatMessages,
    tools: chatTools,
    addGenerationPrompt: true,
    kwargs,
  });
  const promptIds = ctx.tokenizer.encode(promptText);
  checkContext({ promptLen: promptIds.length, requested: requestedMaxTokens, maxModelLen: ctx.options.maxModelLen });
  const maxTokens = requestedMaxTokens ?? ctx.options.maxTokens ?? ctx.options.maxModelLen - promptIds.length;
  const id = `resp_${hexId()}`;
  const { job, writer } = await openJob(ctx, {
    ex,
    responseId: id,
    requestId: null,
    endpoint: 'responses',
    model: model.name,
    lora: model.lora,
    cacheSalt: typeof body.cache_salt === 'string' ? body.cache_salt : null,
    stream,
    named: true,
  });
  const admission = job.admitPrompt(promptIds);
  const newCallId = () => `call_${hexId()}`;
  const plan = choicePlan(ctx, {
    prompt: { endpoint: 'responses', text: promptText, tokenIds: promptIds, messages: chatMessages },
    respondContext: { body, headers: ex.req.headers, choiceIndex: 0, promptIndex: 0, tools: chatTools },
    enableThinking,
    newToolId: newCallId,
  });
  const choice = job.addChoice({
    index: 0,
    promptIndex: 0,
    choiceIndex: 0,
    promptIds,
    admission,
    config: {
      maxTokens,
      stop: [],
      stopTokenIds: [],
      includeStopStrInOutput: false,
      stopStringIds: ctx.options.stopStringIds,
      sampling: ctx.options.defaultSampling,
      seed: 0,
      plan: plan.plan,
    },
  });
  const qwen3 = ctx.tokenizer.name === 'qwen3';
  let parsing: ChatParsing | undefined;
  const parsingNow = (): ChatParsing => {
    parsing ??= {
      shape: qwen3 ? 'vllm' : 'chars',
      reasoning: reasoningParserFor(ctx),
      tools: (qwen3 ? chatTools.length > 0 && toolChoice !== 'none' : plan.firstText().includes('<tool_call>'))
        ? createToolParser(qwen3 ? 'hermes' : 'chars', qwen3 ? newCallId : plan.toolIdFor)
        : null,
      // The Responses output here has no reasoning item: reasoning is parsed away, not shown.
      includeReasoning: false,
      promptEndsReasoning: qwen3 && enableThinking === false,
      reasoningField: ctx.options.reasoningField,
    };
    return parsing;
  };

  const createdAt = Math.floor(Date.now() / 1000);
  const messageId = `msg_${hexId()}`;
  const usageOf = () => ({
    input_tokens: promptIds.length,
    input_tokens_details: {
      cached_tokens: ctx.options.enablePromptTokensDetails ? admission.cachedTokens : 0,
      cache_write_tokens: 0,
      input_tokens_per_turn: [],
      cached_tokens_per_turn: [],
    },
    output_tokens: choice.seq.ids.length,
    output_tokens_details: {
      reasoning_tokens: 0,
      tool_output_tokens: 0,
      output_tokens_per_turn: [],
      tool_output_tokens_per_turn: [],
    },
    total_tokens: promptIds.length + choice.seq.ids.length,
  });
  const fmt = logprobFormat(ctx, { top: topLogprobs, asTokenIds: false });
  /** A finished text part: with `include` logprobs, those of every generated token (vLLM's final_output). */
  const textPart = (partText: string) => ({
    type: 'output_text',
    text: partText,
    annotations: [],
    logprobs:
      withLogprobs && choice.seq.done ? chatEntries(choice.seq, { start: 0, end: choice.seq.ids.length, fmt }) : [],
  });
  /** A text delta event's logprobs: its own tokens', in the stream event's shape (no bytes). */
  const deltaLogprobs = (range: { start: number; end: number }) =>
    withLogprobs
      ? chatEntries(choice.seq, { ...range, fmt }).map((e) => ({
          token: e.token,
          logprob: e.logprob,
          top_logprobs: e.top_logprobs.map((t) => ({ token: t.token, logprob: t.logprob })),
        }))
      : [];
  /** enable_response_messages: the raw prompt and output with their ids, on a finished response object. */
  const rawMessages = (status: string) =>
    enableMessages && status !== 'in_progress'
      ? {
          input_messages: [{ type: 'raw_message_tokens', message: promptText, tokens: promptIds }],
          output_messages:
            choice.seq.ids.length > 0
              ? [{ type: 'raw_message_tokens', message: choice.seq.text, tokens: [...choice.seq.ids] }]
              : [],
        }
      : {};
  const messageItem = (status: string, content: unknown[]) => ({
    type: 'message',
    id: messageId,
    role: 'assistant',
    status,
    content,
    phase: null,
  });
  const callItem = (call: CallOut, args: string, status: string) => ({
    type: 'function_call',
    id: call.itemId,
    call_id: call.id,
    name: call.name,
    arguments: args,
    status,
  });
  const responseObject = (status: string, out: unknown[], u: ReturnType<typeof usageOf> | null) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: requestedMaxTokens ?? null,
    max_tool_calls: null,
    metadata: body.metadata ?? null,
    model: model.name,
    output: out,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt: null,
    reasoning: null,
    service_tier: 'auto',
    temperature: body.temperature ?? 1.0,
    // vLLM 0.32.0 echoes these as asked (`text` null when not asked; `tool_choice` "none" without tools).
    text: body.text ?? null,
    tool_choice: body.tool_choice ?? (chatTools.length > 0 ? 'auto' : 'none'),
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_logprobs: topLogprobs,
    top_p: body.top_p ?? 1.0,
    truncation: 'disabled',
    usage: u,
    user: null,
    presence_penalty: body.presence_penalty ?? 0,
    frequency_penalty: body.frequency_penalty ?? 0,
    kv_transfer_params: null,
    ec_transfer_params: null,
    ...rawMessages(status),
  });
  const finalStatus = () => (choice.seq.finishReason === 'length' ? 'incomplete' : 'completed');
  /** The output items of a finished answer; a tool-call answer with no text has no message item. */
  const outputOf = (text: string, calls: CallOut[]) => {
    const hasMessage = calls.length === 0 || text !== '';
    return [
      ...(hasMessage ? [messageItem('completed', [textPart(text)])] : []),
      ...calls.map((c) => callItem(c, c.arguments, 'completed')),
    ];
  };

  if (writer) {
    let seqNo = 0;
    const ev = (type: string, payload: Record<string, unknown>, ids?: readonly number[]): StreamEvent => ({
      name: type,
      data: serialize({ type, sequence_number: seqNo++, ...payload }),
      ...(ids ? { ids } : {}),
    });
    const state = () => (deltaState ??= new ChatDeltaState(parsingNow()));
    let deltaState: ChatDeltaState | undefined;
    let text = '';
    let messageOpen = false;
    let messageDone = false;
    let messageIndex = -1;
    const calls: CallOut[] = [];
    let openCall: number | undefined;
    let outputCount = 0;
    const callIndex = new Map<number, number>();
    const textRef = () => ({ item_id: messageId, output_index: messageIndex, content_index: 0 });
    const closeMessage = (out: StreamEvent[], ids?: readonly number[]) => {
      if (!messageOpen) return;
      messageOpen = false;
      messageDone = true;
      out.push(ev('response.output_text.done', { ...textRef(), text, logprobs: [] }, ids));
      out.push(ev('response.content_part.done', { ...textRef(), part: textPart(text) }));
      out.push(
        ev('response.output_item.done', {
          output_index: messageIndex,
          item: messageItem('completed', [textPart(text)]),
        }),
      );
    };
    const openMessage = (out: StreamEvent[]) => {
      messageIndex = outputCount++;
      out.push(ev('response.output_item.added', { output_index: messageIndex, item: messageItem('in_progress', []) }));
      out.push(ev('response.content_part.added', { ...textRef(), part: textPart('') }));
      messageOpen = true;
    };
    const closeCall = (out: StreamEvent[], ids?: readonly number[]) => {
      if (openCall === undefined) return;
      const call = calls[openCall]!;
      const ref = { item_id: call.itemId, output_index: callIndex.get(openCall)! };
      out.push(
        ev('response.function_call_arguments.done', { ...ref, name: call.name, arguments: call.arguments }, ids),
      );
      out.push(
        ev('response.output_item.done', {
          output_index: ref.output_index,
          item: callItem(call, call.arguments, 'completed'),
        }),
      );
      openCall = undefined;
    };
    const translate = (deltaText: string, ids: readonly number[]): StreamEvent[] => {
      const out: StreamEvent[] = [];
      const delta = state().next(deltaText, ids);
      let carried = false;
      const idsOnce = () => {
        if (carried) return undefined;
        carried = true;
        return ids;
      };
      if (delta?.content) {
        if (!messageOpen && !messageDone) openMessage(out);
        if (messageOpen) {
          const carried = idsOnce();
          const end = choice.seq.ids.length;
          const logprobs = carried ? deltaLogprobs({ start: end - carried.length, end }) : [];
          out.push(ev('response.output_text.delta', { ...textRef(), delta: delta.content, logprobs }, carried));
          text += delta.content;
        }
      }
      for (const tc of delta?.tool_calls ?? []) {
        const index = typeof tc.index === 'number' ? tc.index : 0;
        const fn = isRecord(tc.function) ? tc.function : {};
        if (typeof fn.name === 'string') {
          closeMessage(out);
          closeCall(out);
          const call: CallOut = {
            id: typeof tc.id === 'string' ? tc.id : newCallId(),
            itemId: `fc_${hexId()}`,
            name: fn.name,
            arguments: '',
          };
          calls[index] = call;
          callIndex.set(index, outputCount++);
          openCall = index;
          out.push(
            ev(
              'response.output_item.added',
              { output_index: callIndex.get(index)!, item: callItem(call, '', 'in_progress') },
              idsOnce(),
            ),
          );
        }
        if (typeof fn.arguments === 'string' && fn.arguments !== '' && calls[index]) {
          const call = calls[index]!;
          call.arguments += fn.arguments;
          out.push(
            ev(
              'response.function_call_arguments.delta',
              { item_id: call.itemId, output_index: callIndex.get(index)!, delta: fn.arguments },
              idsOnce(),
            ),
          );
        }
      }
      if (choice.seq.done) {
        // The end token: the first closing event carries it.
        if (openCall !== undefined) closeCall(out, idsOnce());
        else {
          if (!messageOpen && !messageDone && calls.length === 0) openMessage(out);
          closeMessage(out, idsOnce());
        }
        closeMessage(out);
        const output = [
          ...(messageIndex >= 0 ? [{ at: messageIndex, item: messageItem('completed', [textPart(text)]) }] : []),
          ...calls.map((c, k) => ({ at: callIndex.get(k)!, item: callItem(c, c.arguments, 'completed') })),
        ]
          .sort((a, b) => a.at - b.at)
          .map((x) => x.item);
        const status = finalStatus();
        out.push(
          ev(status === 'incomplete' ? 'response.incomplete' : 'response.completed', {
            response: responseObject(status, output, usageOf()),
          }),
        );
      }
      return out;
    };
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        head: () => [
          ev('response.created', { response: responseObject('in_progress', [], null) }),
          ev('response.in_progress', { response: responseObject('in_progress', [], null) }),
        ],
        step: (_c, r) => translate(r.text, r.ids),
        aborted: (_c, rest) => translate(rest, []),
        done: false,
      },
    });
    return;
  }

  await runNonStream(ctx, { ex, job });
  const answer = parseAnswer(choice.seq.text, parsingNow());
  const calls = answer.toolCalls.map((c) => ({ ...c, itemId: `fc_${hexId()}` }));
  const nonStreamBody = responseObject(finalStatus(), outputOf(answer.content ?? '', calls), usageOf());
  sendNonStreamBody(ex, serialize(nonStreamBody));
}
