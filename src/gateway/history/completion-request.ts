// A chat call as a token-in completion: the rendered-and-spliced prompt ids as `prompt`, the chat body's sampling
// settings carried over under their completions names. Chat features a completion cannot express the same way
// (structured output, forced tool calls, several choices) keep the call on the chat route.
import { isObj, type Obj } from './narrow.js';

/** Keys with the same meaning on vLLM's chat and completions routes (sampling, stopping, caching, ids). */
const SHARED_KEYS = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'seed',
  'stop',
  'stop_token_ids',
  'presence_penalty',
  'frequency_penalty',
  'repetition_penalty',
  'length_penalty',
  'logit_bias',
  'min_tokens',
  'ignore_eos',
  'include_stop_str_in_output',
  'skip_special_tokens',
  'spaces_between_special_tokens',
  'bad_words',
  'allowed_token_ids',
  'user',
  'cache_salt',
  'priority',
  'request_id',
  'return_tokens_as_token_ids',
  'kv_transfer_params',
  'vllm_xargs',
] as const;

/** Chat keys that change what is generated in ways a plain completion would not reproduce. */
const CHAT_ONLY_KEYS = [
  'structured_outputs',
  'guided_json',
  'guided_regex',
  'guided_choice',
  'guided_grammar',
  'guided_whitespace_pattern',
  'guided_decoding_backend',
  'use_beam_search',
  'echo',
  'prompt_logprobs',
  'functions',
  'function_call',
  'continue_final_message',
] as const;

/** Why this chat body cannot be served token-in; null when it can. */
export function unsupportedReason(body: Readonly<Obj>): string | null {
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages';
  if (body.n !== undefined && body.n !== null && body.n !== 1) return 'n';
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null && choice !== 'auto') return 'tool_choice';
  const format = body.response_format;
  if (format !== undefined && format !== null && !(isObj(format) && format.type === 'text')) return 'response_format';
  for (const key of CHAT_ONLY_KEYS) {
    const value = body[key];
    if (value !== undefined && value !== null && value !== false) return key;
  }
  if (body.add_generation_prompt === false) return 'add_generation_prompt';
  if (body.include_reasoning === false) return 'include_reasoning';
  for (const message of body.messages) {
    if (!isObj(message)) return 'messages';
    const content = message.content;
    if (Array.isArray(content) && content.some((part) => !(isObj(part) && part.type === 'text'))) return 'multimodal';
  }
  return null;
}

/** The /tokenize body that renders this chat call's prompt with the engine's template. */
export function renderBody(body: Readonly<Obj>, model: string): Obj {
  const out: Obj = { model, messages: body.messages, add_generation_prompt: true };
  if (Array.isArray(body.tools) && body.tools.length > 0) out.tools = body.tools;
  if (isObj(body.chat_template_kwargs)) out.chat_template_kwargs = body.chat_template_kwargs;
  if (typeof body.chat_template === 'string') out.chat_template = body.chat_template;
  return out;
}

/**
 * The /v1/completions body for the rewritten chat body: `prompt` the ids, `max_tokens` what the chat route would
 * allow (the context left when the call sets none), logprobs as a count, token ids always returned.
 */
export function completionBody(options: {
  readonly chat: Readonly<Obj>;
  readonly prompt: readonly number[];
  readonly maxModelLen: number;
}): Obj {
  const { chat, prompt } = options;
  const out: Obj = { model: chat.model, prompt, return_token_ids: true };
  for (const key of SHARED_KEYS) if (chat[key] !== undefined) out[key] = chat[key];
  const requested = chat.max_completion_tokens ?? chat.max_tokens;
  out.max_tokens = typeof requested === 'number' ? requested : Math.max(1, options.maxModelLen - prompt.length);
  if (chat.logprobs === true) out.logprobs = typeof chat.top_logprobs === 'number' ? Math.max(0, chat.top_logprobs) : 0;
  if (chat.stream === true) {
    out.stream = true;
    if (isObj(chat.stream_options)) out.stream_options = chat.stream_options;
  }
  return out;
}
