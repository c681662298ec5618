// Posts an attempt's reward to the gateway's reward endpoint (`POST {"value": number}`), the same call a
// process agent makes with ROLLGATE_REWARD_URL, so in-process and process agents store rewards identically.

import { HEADER_AUTHORIZATION } from '../gateway/upstream/headers.js';
import { HttpCallError } from '../http-call-error.js';

export interface PostRewardOptions {
  readonly rewardUrl: string;
  readonly apiKey: string;
  readonly value: number;
  readonly signal?: AbortSignal;
  readonly fetch?: typeof fetch;
}

export class RewardPostError extends HttpCallError {
  override readonly name = 'RewardPostError';
}

export async function postReward(options: PostRewardOptions): Promise<void> {
  if (!Number.isFinite(options.value)) {
    throw new RewardPostError(`reward must be a finite number, got ${String(options.value)}`, { status: null });
  }
  const doFetch = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(options.rewardUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [HEADER_AUTHORIZATION]: `Bearer ${options.apiKey}` },
      body: JSON.stringify({ value: options.value }),
      signal: options.signal,
    });
  } catch (error: unknown) {
    throw new RewardPostError('reward endpoint unreachable', { status: null, cause: error });
  }
  // Drain the body either way so the keep-alive connection is reused (docs/failure-classes.md#42).
  const text = await response.text();
  if (!response.ok) {
    throw new RewardPostError(`reward endpoint answered ${response.status}: ${text.slice(0, 500)}`, {
      status: response.status,
    });
  }
}
