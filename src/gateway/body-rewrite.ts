// The upstream body: the client's body with keys added or overridden, never removed (architecture §3,
// pitfall 11). The client's original value of every key we change goes into `overrides`, which the
// span records as `rollgate.request.overrides` (pitfall 12).
import { clientCacheSalt } from './cache-salt.js';
import type { Endpoint } from './call-capture.js';

export type BackendType = 'vllm' | 'openai';
export type LogprobsPolicy = 'off' | 'train' | 'always';
export type RolloutModeHint = 'train' | 'val' | 'test' | null;

/** Completions `logprobs` is the number of alternatives; 1 is what agent-lightning v0.3 sent and vLLM honours. */
export const COMPLETIONS_LOGPROBS = 1;

export interface RewriteOptions {
  readonly endpoint: Endpoint;
  readonly backendType: BackendType;
  readonly upstreamModel: string;
  readonly tokenIds: boolean;
  readonly logprobs: LogprobsPolicy;
  /** The rollout's mode; `train` policy injects logprobs unless the rollout is explicitly val/test. */
  readonly mode: RolloutModeHint;
  /** Keys a route forces on top of the standard rewrite (v1's mode routes set `temperature`); recorded too. */
  readonly forced?: Readonly<Record<string, unknown>>;
  /** The pool version's `cache_salt` (cache-salt.ts) for vLLM backends; null or absent: none. */
  readonly cacheSalt?: string | null;
}

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

  if (body.model !== options.upstreamModel) set('model', options.upstreamModel);

  // The Responses API has no token ids, logprobs flag or stream_options (its last event carries the usage): only
  // the model name is mapped (plus a vLLM backend's cache_salt, below), so the body is otherwise the agent's own.
  const responses = options.endpoint === 'responses';

  if (!responses && options.backendType === 'vllm' && options.tokenIds) set('return_token_ids', true);

  if (options.endpoint === 'chat') {
    // top_logprobs without logprobs:true is a 400 on vLLM and OpenAI alike (pitfall 13).
    const needsForTop = body.top_logprobs !== undefined && body.top_logprobs !== null;
    if (needsForTop || wantsLogprobs(options.logprobs, options.mode)) set('logprobs', true);
  } else if (options.endpoint === 'completions' && wantsLogprobs(options.logprobs, options.mode)) {
    const current = body.logprobs;
    if (typeof current !== 'number' || !Number.isInteger(current) || current < COMPLETIONS_LOGPROBS)
      set('logprobs', COMPLETIONS_LOGPROBS);
  }

  for (const [key, value] of Object.entries(options.forced ?? {})) set(key, value);

  const injected: string[] = [];
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
    // vLLM rejects stream_options on non-streams, so it is only ever added here (contracts.md §1.3).
    if (!clientAskedUsage) {
      overrides.stream_options = 'stream_options' in client ? client.stream_options : null;
      body.stream_options = { ...clientOptions, include_usage: true };
    }
  }
  return { body, overrides, injected, isStream, clientAskedUsage };
}
