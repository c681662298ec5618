// A training row's routed experts (MoE routing replay, docs/training-data.md#routed-experts): the routes stored on
// the row's last call, which with prefix caching and a token-exact linear history cover every token of the row.
// They are taken only when that call's prompt and response ids are the row's tokens exactly and the routes have
// one row per token but the last; anything else is missing, never routes of other tokens.
import { readStoredCall } from '../../contracts/stored-call.js';
import { storedToNpyBase64 } from '../../gateway/capture/routed-experts.js';
import type { Span } from '../../store/core/types.js';

export interface RowTokens {
  readonly promptIds: readonly number[];
  readonly responseIds: readonly number[];
  readonly sequenceIds: readonly number[];
}

/** Whether any call of the rollout came from a pool that captures routes: its rows then need them (R3). */
export function rolloutHasRoutes(spans: readonly Span[]): boolean {
  return spans.some((span) => readStoredCall(span.attributes).routedExpertsStatus !== null);
}

function sameTokens(row: RowTokens, prompt: readonly number[], response: readonly number[]): boolean {
  if (prompt.length + response.length !== row.promptIds.length + row.responseIds.length) return false;
  const at = (i: number): number | undefined =>
    i < row.promptIds.length ? row.promptIds[i] : row.responseIds[i - row.promptIds.length];
  for (let i = 0; i < prompt.length; i++) if (prompt[i] !== at(i)) return false;
  for (let i = 0; i < response.length; i++) if (response[i] !== at(prompt.length + i)) return false;
  return true;
}

/**
 * The row's routes as the stored base64 `.npy` string, shape (prompt + response - 1, layers, top_k); null when
 * its last call has none or they do not cover the row's tokens exactly.
 */
export function rowRoutedExperts(row: RowTokens, bySequence: ReadonlyMap<number, Span>): string | null {
  const last = row.sequenceIds[row.sequenceIds.length - 1];
  const span = last === undefined ? undefined : bySequence.get(last);
  if (span === undefined) return null;
  const call = readStoredCall(span.attributes);
  const routes = call.routedExperts;
  const prompt = call.promptIds;
  const response = call.responseIds;
  if (routes === null || prompt === null || response === null || !sameTokens(row, prompt, response)) return null;
  if (routes.shape[0] !== prompt.length + response.length - 1) return null;
  return storedToNpyBase64(routes);
}

/** The rollout's spans by sequence id (the ids rows name their calls by). */
export function spansBySequence(spans: readonly Span[]): Map<number, Span> {
  const map = new Map<number, Span>();
  for (const span of spans) map.set(span.sequence_id, span);
  return map;
}
