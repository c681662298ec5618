// Request fields shared by the generation routes, validated the way vLLM does (400 with an int code).
import type { IncomingMessage } from 'node:http';
import type { TwinContext } from './context.js';
import { optionalBool, optionalInt, optionalString, stopStrings, stopTokenIds, VllmError } from './errors.js';
import { type SamplingSettings, samplingSettings } from './sampler.js';
import { hexId, isRecord } from './util.js';

export interface CommonParams {
  stream: boolean;
  includeUsage: boolean;
  n: number;
  returnTokenIds: boolean;
  asTokenIds: boolean;
  stop: string[];
  stopTokenIds: number[];
  includeStopStrInOutput: boolean;
  requestedMaxTokens: number | undefined;
  sampling: SamplingSettings;
  seed: number;
  cacheSalt: string | null;
}

export const MAX_LOGPROBS = 20;

export function validateSampling(s: SamplingSettings): SamplingSettings {
  if (s.temperature < 0) throw new VllmError(400, `temperature must be non-negative, got ${s.temperature}.`);
  if (!(s.topP > 0 && s.topP <= 1)) throw new VllmError(400, `top_p must be in (0, 1], got ${s.topP}.`);
  if (!Number.isInteger(s.topK) || s.topK < -1) {
    throw new VllmError(400, `top_k must be 0 (disable), or at least 1, got ${s.topK}.`);
  }
  if (s.minP < 0 || s.minP > 1) throw new VllmError(400, `min_p must be in [0, 1], got ${s.minP}.`);
  return s;
}

export function commonParams(ctx: TwinContext, body: Record<string, unknown>): CommonParams {
  const stream = optionalBool(body, 'stream') ?? false;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) throw new VllmError(400, 'Stream options can only be defined when `stream=True`.');
    if (!isRecord(so)) throw new VllmError(400, '1 validation error:\n  stream_options: Input should be an object');
  }
  if (body.prompt_logprobs !== undefined && body.prompt_logprobs !== null && stream) {
    throw new VllmError(400, '`prompt_logprobs` are not available when `stream=True`.');
  }
  const maxTokens = optionalInt(body, 'max_completion_tokens', 1) ?? optionalInt(body, 'max_tokens', 1);
  const seed = optionalInt(body, 'seed', Number.MIN_SAFE_INTEGER);
  return {
    stream,
    includeUsage: isRecord(so) && so.include_usage === true,
    n: optionalInt(body, 'n', 1) ?? 1,
    returnTokenIds: optionalBool(body, 'return_token_ids') ?? false,
    asTokenIds: optionalBool(body, 'return_tokens_as_token_ids') ?? ctx.options.returnTokensAsTokenIds,
    stop: stopStrings(body),
    stopTokenIds: stopTokenIds(body),
    includeStopStrInOutput: optionalBool(body, 'include_stop_str_in_output') ?? false,
    requestedMaxTokens: maxTokens,
    sampling: validateSampling(samplingSettings(body, ctx.options.defaultSampling)),
    seed: seed === undefined ? 0 : seed | 0,
    cacheSalt: optionalString(body, 'cache_salt') ?? null,
  };
}

export function checkContext(options: { promptLen: number; requested: number | undefined; maxModelLen: number }): void {
  const { promptLen, requested, maxModelLen } = options;
  if (promptLen > maxModelLen) {
    throw new VllmError(
      400,
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptLen} input tokens. Please reduce the length of the input messages.`,
    );
  }
  if (requested !== undefined && requested > maxModelLen - promptLen) {
    throw new VllmError(
      400,
      `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${maxModelLen} tokens and your request has ${promptLen} input tokens (${requested} > ${maxModelLen} - ${promptLen}).`,
    );
  }
}

export interface ModelChoice {
  /** The model name to answer with. */
  name: string;
  /** The LoRA adapter it names, or null for the base model. */
  lora: string | null;
}

/** The model a request names: the base model (or an alias), a loaded LoRA adapter, or a vLLM 404. */
export function checkModel(ctx: TwinContext, body: Record<string, unknown>): ModelChoice {
  const modelName = body.model;
  if (modelName !== undefined && modelName !== null && typeof modelName !== 'string') {
    throw new VllmError(400, '1 validation error:\n  model: Input should be a valid string');
  }
  if (typeof modelName !== 'string') return { name: ctx.options.model, lora: null };
  if (ctx.engine.adapters.has(modelName)) return { name: modelName, lora: modelName };
  if (!ctx.options.anyModel && !ctx.options.served.has(modelName)) {
    throw new VllmError(404, `The model \`${modelName}\` does not exist.`, 'NotFoundError', 'model');
  }
  return { name: modelName, lora: null };
}

/** vLLM's request id: the X-Request-Id header, else the body's request_id, else random. */
export function baseRequestId(
  headers: IncomingMessage['headers'],
  body: Record<string, unknown>,
): {
  id: string;
  fromCaller: string | null;
} {
  const header = headers['x-request-id'];
  if (typeof header === 'string' && header !== '') return { id: header, fromCaller: header };
  if (typeof body.request_id === 'string' && body.request_id !== '')
    return { id: body.request_id, fromCaller: body.request_id };
  return { id: hexId(), fromCaller: null };
}
