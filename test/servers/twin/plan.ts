// A choice's answer under given weights: respond() -> raw generated text (with the <think> block and tool-call
// format of the mode) -> token ids + EOS. Cached per weights, so respond() runs once per (choice, weights).
import type { TwinContext } from './context.js';
import { defaultReasoning, renderOutput, replyObject } from './respond.js';
import { toolCallId } from './tool-parser.js';
import type { MockPrompt, MockRespondContext, TwinWeights } from './types.js';

export interface ChoicePlan {
  plan: (weights: TwinWeights) => readonly number[];
  /** The raw text of the answer under the weights its first token was computed with. */
  firstText: () => string;
  /** chars mode: tool-call ids (the reply's, else generated once). */
  toolIdFor: (index: number) => string;
}

export function choicePlan(
  ctx: TwinContext,
  options: {
    prompt: MockPrompt;
    respondContext: Omit<MockRespondContext, 'weights'>;
    /** chat_template_kwargs.enable_thinking (undefined when unset); completions never think. */
    enableThinking: boolean | undefined;
    /** How tool-call ids the reply does not give are made (the Responses API uses `call_...`). */
    newToolId?: () => string;
  },
): ChoicePlan {
  const byWeights = new Map<string, { ids: readonly number[]; text: string; toolIds: (string | undefined)[] }>();
  let first: { text: string; toolIds: (string | undefined)[] } | undefined;
  const generatedIds = new Map<number, string>();
  const compute = (weights: TwinWeights) => {
    let hit = byWeights.get(weights.key);
    if (hit) return hit;
    const reply = replyObject(ctx.respond(options.prompt, { ...options.respondContext, weights }));
    const completions = options.prompt.endpoint === 'completions';
    const qwen3 = ctx.tokenizer.name === 'qwen3';
    const thinks =
      qwen3 &&
      !completions &&
      options.enableThinking !== false &&
      (options.enableThinking === true || reply.reasoning !== undefined || ctx.options.reasoning);
    const reasoning = thinks
      ? (reply.reasoning ?? defaultReasoning(options.prompt, options.respondContext.choiceIndex))
      : null;
    const rendered = completions
      ? { text: reply.content ?? '', toolIds: [] }
      : renderOutput(reply, { style: qwen3 ? 'hermes' : 'chars', reasoning });
    hit = {
      ids: [...ctx.tokenizer.encode(rendered.text), ctx.tokenizer.eosId],
      text: rendered.text,
      toolIds: rendered.toolIds,
    };
    byWeights.set(weights.key, hit);
    first ??= hit;
    return hit;
  };
  return {
    plan: (weights) => compute(weights).ids,
    firstText: () => first?.text ?? '',
    toolIdFor(index) {
      const fromReply = first?.toolIds[index];
      if (fromReply !== undefined) return fromReply;
      let id = generatedIds.get(index);
      if (id === undefined) {
        id = (options.newToolId ?? toolCallId)();
        generatedIds.set(index, id);
      }
      return id;
    },
  };
}
