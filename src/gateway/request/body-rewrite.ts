// The upstream body: the client's body with keys added or overridden, never removed (docs/architecture.md,
// docs/failure-classes.md#11). The client's original value of every key we change goes into `overrides`, which the
// span records as `rollgate.request.overrides` (docs/failure-classes.md#12). What each engine is asked for, per route, is in
// docs/real-engines.md ("What is captured, per route").

import type { Endpoint } from '../../contracts/call-record.js';
import {
  TOKEN_IDS_REASON_VALUE_BACKGROUND,
  TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED,
  type TokenIdsUnavailableReason,
} from '../../contracts/span-attributes.js';
import { clientCacheSalt } from '../swap/cache-salt.js';

/** `vllm` and `sglang` are asked for token ids (each its own way); `openai` never is. */
export type BackendType = 'vllm' | 'sglang' | 'openai';

/** vLLM's Responses API returns the raw prompt and output with their ids when asked (non-background only). */
export const RESPONSES_MESSAGES_KEY = 'enable_response_messages';
/** The Responses `include` entry that puts logprobs on output_text parts. */
export const RESPONSES_LOGPROBS_INCLUDE = 'message.output_text.logprobs';
export type LogprobsPolicy = 'off' | 'train' | 'always';
export type RolloutModeHint = 'train' | 'val' | 'test' | null;

/** Completions `logprobs` is the number of alternatives; 1 is what agent-lightning v0.3 sent and vLLM honours. */
export const COMPLETIONS_LOGPROBS = 1;

export interface RewriteOptions {
  readonly endpoint: Endpoint;
  readonly backendType: BackendType;
  /** null: the agent's own `model` goes upstream unchanged. */
  readonly upstreamModel: string | null;
  readonly tokenIds: boolean;
  readonly logprobs: LogprobsPolicy;
  /** The rollout's mode; `train` policy injects logprobs unless the rollout is explicitly val/test. */
  readonly mode: RolloutModeHint;
  /** Keys a route forces on top of the standard rewrite (v1's mode routes set `temperature`); recorded too. */
  readonly forced?: Readonly<Record<string, unknown>>;
  /** The pool version's `cache_salt` (cache-salt.ts) for vLLM backends; null or absent: none. */
  readonly cacheSalt?: string | null;
  /** The most the agent's max tokens may ask for (engine/context-fit.ts); absent: as the agent sent them. */
  readonly maxTokensAtMost?: number;
  /** The pool captures MoE routed experts: SGLang is asked for them per request (vLLM by its launch flag). */
  readonly routedExperts?: boolean;
}

/** SGLang's request field for the routed experts (capture/routed-experts.ts). */
export const SGLANG_ROUTED_EXPERTS_KEY = 'return_routed_experts';

/** The keys an agent sets its answer budget with, per route (the Messages API's arrives translated to chat). */
export const MAX_TOKENS_KEYS: Readonly<Record<Endpoint, readonly string[]>> = {
  chat: ['max_tokens', 'max_completion_tokens'],
  completions: ['max_tokens'],
  responses: ['max_output_tokens'],
};

export interface RewrittenBody {
  readonly body: Record<string, unknown>;
  /** Key -> the client's original value (null when it sent none). Empty when nothing changed. */
  readonly overrides: Record<string, unknown>;
  /**
   * Keys added that the client did not send and that are not overrides (the version's cache_salt): the
   * gateway's own bookkeeping, on every call, would only bury the real overrides on the span.
   */
  readonly injected: readonly string[];
  readonly isStream: boolean;
  /** Whether the client itself asked for the usage chunk (only meaningful for streams). */
  readonly clientAskedUsage: boolean;
  /** Why the engine could not be asked for token ids for this call; null when it was (or ids are off). */
  readonly idsUnavailable: TokenIdsUnavailableReason | null;
}

function wantsLogprobs(policy: LogprobsPolicy, mode: RolloutModeHint): boolean {
  if (policy === 'always') return true;
  if (policy === 'off') return false;
  return mode !== 'val' && mode !== 'test';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function rewriteBody(client: Record<string, unknown>, options: RewriteOptions): RewrittenBody {
  const body: Record<string, unknown> = { ...client };
  const overrides: Record<string, unknown> = {};
  const set = (key: string, value: unknown): void => {
    if (body[key] === value) return;
    overrides[key] = key in client ? client[key] : null;
    body[key] = value;
  };

  if (options.upstreamModel !== null && body.model !== options.upstreamModel) set('model', options.upstreamModel);

  // The Responses API has no return_token_ids, logprobs flag or stream_options (its last event carries the usage);
  // vLLM returns ids there only as raw messages, which responsesKeys() asks for where it can.
  const responses = options.endpoint === 'responses';
  const wantLogprobs = wantsLogprobs(options.logprobs, options.mode);
  let idsUnavailable: TokenIdsUnavailableReason | null = null;

  if (!responses && options.tokenIds) {
    if (options.backendType === 'vllm') set('return_token_ids', true);
    else if (options.backendType === 'sglang') {
      // SGLang answers a chat stream that asks for ids with a 400, and its chat chunks carry none anyway.
      if (options.endpoint === 'chat' && client.stream === true)
        idsUnavailable = TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED;
      else set('return_token_ids', true);
    }
  }
  if (responses && options.backendType === 'vllm') {
    const keys = responsesKeys(client, { tokenIds: options.tokenIds, logprobs: wantLogprobs });
    idsUnavailable = keys.unavailable;
    for (const [key, value] of Object.entries(keys.set)) set(key, value);
  }

  if (options.endpoint === 'chat') {
    // top_logprobs without logprobs:true is a 400 on vLLM and OpenAI alike (docs/failure-classes.md#13).
    const needsForTop = body.top_logprobs !== undefined && body.top_logprobs !== null;
    if (needsForTop || wantLogprobs) set('logprobs', true);
  } else if (options.endpoint === 'completions' && wantLogprobs) {
    const current = body.logprobs;
    if (typeof current !== 'number' || !Number.isInteger(current) || current < COMPLETIONS_LOGPROBS)
      set('logprobs', COMPLETIONS_LOGPROBS);
  }

  if (!responses && options.routedExperts === true && options.backendType === 'sglang')
    set(SGLANG_ROUTED_EXPERTS_KEY, true);

  for (const [key, value] of Object.entries(options.forced ?? {})) set(key, value);

  // Only lowered, never raised or added: an agent that sent no budget gets the engine's own default (what is left).
  const atMost = options.maxTokensAtMost;
  if (atMost !== undefined) {
    for (const key of MAX_TOKENS_KEYS[options.endpoint]) {
      const asked = body[key];
      if (typeof asked === 'number' && asked > atMost) set(key, atMost);
    }
  }

  const injected: string[] = [];
  // SGLang flushes its radix cache on every weight update itself (flush_cache defaults to true), so it gets none.
  const salt = options.backendType === 'vllm' ? (options.cacheSalt ?? null) : null;
  // vLLM's Responses API takes cache_salt too, and its prefix cache is the same one.
  if (salt !== null) {
    const own = client.cache_salt;
    if (own === undefined) {
      body.cache_salt = salt;
      injected.push('cache_salt');
    } else if (own === null) {
      set('cache_salt', salt);
    } else if (typeof own === 'string' && own !== '') {
      set('cache_salt', clientCacheSalt({ versionSalt: salt, clientSalt: own }));
    }
    // Any other value is the client's own 400 to get from vLLM: replacing it would hide the mistake.
  }

  const isStream = body.stream === true;
  // Nothing is injected into a Responses stream, so there is nothing to strip from it either.
  let clientAskedUsage = responses;
  if (isStream && !responses) {
    const clientOptions = isRecord(client.stream_options) ? client.stream_options : null;
    clientAskedUsage = clientOptions?.include_usage === true;
    // vLLM rejects stream_options on non-streams, so it is only ever added here (docs/agent-view.md).
    if (!clientAskedUsage) {
      overrides.stream_options = 'stream_options' in client ? client.stream_options : null;
      body.stream_options = { ...clientOptions, include_usage: true };
    }
  }
  return { body, overrides, injected, isStream, clientAskedUsage, idsUnavailable };
}

/**
 * What a vLLM Responses call gets to record ids and logprobs: `enable_response_messages` (the raw prompt and
 * output with their ids) and the output_text logprobs include. Only a non-stream, non-background call: vLLM
 * refuses the messages with background mode, and a stream's raw messages come on its terminal event in a shape
 * that changed across releases (one entry per delta before they were accumulated), which rollgate does not strip
 * in flight. An agent that asked for them itself gets them regardless.
 */
function responsesKeys(
  client: Readonly<Record<string, unknown>>,
  wants: { readonly tokenIds: boolean; readonly logprobs: boolean },
): { readonly set: Record<string, unknown>; readonly unavailable: TokenIdsUnavailableReason | null } {
  if (!wants.tokenIds && !wants.logprobs) return { set: {}, unavailable: null };
  if (client.stream === true) return { set: {}, unavailable: TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED };
  if (client.background === true) return { set: {}, unavailable: TOKEN_IDS_REASON_VALUE_BACKGROUND };
  const set: Record<string, unknown> = {};
  if (wants.tokenIds) set[RESPONSES_MESSAGES_KEY] = true;
  const include = client.include;
  // Any other value is the agent's own 400 to get from vLLM.
  if (wants.logprobs && (include === undefined || include === null || Array.isArray(include))) {
    const list: unknown[] = Array.isArray(include) ? include : [];
    if (!list.includes(RESPONSES_LOGPROBS_INCLUDE)) set.include = [...list, RESPONSES_LOGPROBS_INCLUDE];
  }
  return { set, unavailable: null };
}
