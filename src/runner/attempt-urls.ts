// Where an attempt's agent sends its LLM calls and its reward (docs/gateway.md, docs/store.md).

/** The gateway root with any trailing `/` and `/v1` removed, so both `http://gw` and `http://gw/v1/` work. */
export function normalizeGatewayUrl(gatewayUrl: string): string {
  let url = gatewayUrl.trim();
  while (url.endsWith('/')) url = url.slice(0, -1);
  if (url.endsWith('/v1')) url = url.slice(0, -3);
  while (url.endsWith('/')) url = url.slice(0, -1);
  return url;
}

export interface AttemptIds {
  readonly rolloutId: string;
  readonly attemptId: string;
}

/** `OPENAI_BASE_URL` for one attempt: `<gateway>/rollout/<rid>/attempt/<aid>/v1`. */
export function attemptBaseUrl(gatewayUrl: string, ids: AttemptIds): string {
  const root = normalizeGatewayUrl(gatewayUrl);
  return `${root}/rollout/${encodeURIComponent(ids.rolloutId)}/attempt/${encodeURIComponent(ids.attemptId)}/v1`;
}

/** `ROLLGATE_REWARD_URL` for one attempt; accepts `{"value": number}`. */
export function attemptRewardUrl(gatewayUrl: string, ids: AttemptIds): string {
  const root = normalizeGatewayUrl(gatewayUrl);
  return `${root}/v1/agl/rollouts/${encodeURIComponent(ids.rolloutId)}/attempts/${encodeURIComponent(ids.attemptId)}/reward`;
}
