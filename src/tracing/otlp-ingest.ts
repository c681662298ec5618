// Agent-side spans into the store: map, keep the spans whose rollout and attempt exist (or register them when
// `rollouts.autoCreate` is on, as the proxy does: the gateway's one attribution service decides both), allocate
// every span's sequence id in one call, then one addManySpans. What is skipped is counted; each kind of skip is
// logged once, not per span.
//
// The gateway issues sequence ids (docs/observability.md): a sender's `agentlightning.span_sequence_id` is replaced,
// never stored, so no two spans of a rollout share one and no span carries a second id in its attributes.
import { ATTR_SPAN_SEQUENCE_ID } from '../contracts/span-attributes.js';
import type { Logger } from '../logger.js';
import { isValidId } from '../store/core/ids.js';
import type { LightningStore, SpanInput } from '../store/core/types.js';
import { badRewardAttribute } from '../store-api/reward.js';
import { mapOtlpSpans, type OtlpTraceRequest } from './otlp-spans.js';

export type OtlpIngestStore = Pick<LightningStore, 'nextSequenceIds' | 'addManySpans'>;

/**
 * The attribution service's check (src/attribution/rollout-attribution.ts: registers under the sender's ids when
 * `rollouts.autoCreate` is on, remembers known pairs), stated by its shape so tracing imports nothing above it.
 */
export interface PairChecker {
  ensure(rolloutId: string, attemptId: string): { readonly found: boolean } | Promise<{ readonly found: boolean }>;
}

export interface OtlpIngestOptions {
  readonly store: OtlpIngestStore;
  readonly pairs: PairChecker;
  readonly logger: Logger;
}

export interface OtlpIngestResult {
  /** Spans written (duplicates of already stored spans are not counted). */
  readonly stored: number;
  /** Spans not written: no rollout/attempt ids, unknown rollout/attempt, or no usable trace, span, rollout or attempt id. */
  readonly rejected: number;
  /** Why spans were rejected, for the OTLP partial-success message; empty when none were. */
  readonly rejectedReason: string;
}

export interface OtlpIngestStats {
  readonly received: number;
  readonly stored: number;
  readonly skippedUnattributed: number;
  readonly skippedUnknownRollout: number;
  readonly skippedInvalid: number;
}

export interface OtlpIngestCall {
  /**
   * Sees every (rollout id, attempt id) the batch names before anything is registered or written; throwing refuses
   * the whole batch (the route's credential check, docs/security.md).
   */
  readonly authorize?: (pairs: Iterable<readonly [rolloutId: string, attemptId: string]>) => void;
}

export interface OtlpIngester {
  ingest(request: OtlpTraceRequest, call?: OtlpIngestCall): Promise<OtlpIngestResult>;
  /** Cumulative counters, for /metrics. */
  stats(): OtlpIngestStats;
}

export function createOtlpIngester(options: OtlpIngestOptions): OtlpIngester {
  const { store, pairs: checker, logger } = options;
  const warned = new Set<string>();
  const counters = { received: 0, stored: 0, skippedUnattributed: 0, skippedUnknownRollout: 0, skippedInvalid: 0 };

  const warnOnce = (kind: string, message: string, fields: Record<string, unknown>) => {
    if (warned.has(kind)) return;
    warned.add(kind);
    logger.warn(message, fields);
  };

  return {
    async ingest(request, call) {
      const mapped = mapOtlpSpans(request);
      const received = mapped.spans.length + mapped.unattributed + mapped.invalid;
      // The store's one id rule: a rollout id with a NUL or a slash is never registered from a trace.
      const named = mapped.spans.filter((span) => isValidId(span.rollout_id) && isValidId(span.attempt_id));
      const badIds = mapped.spans.length - named.length;
      // The one reward rule: a reward attribute of Infinity or "lots" is not stored as a reward of null.
      const rewarded = named.filter((span) => badRewardAttribute(span.attributes) === null);
      const badRewards = named.length - rewarded.length;
      counters.received += received;
      counters.skippedUnattributed += mapped.unattributed;
      counters.skippedInvalid += mapped.invalid + badIds + badRewards;
      if (mapped.unattributed > 0) {
        warnOnce('unattributed', 'otlp spans without agentlightning.rollout_id/attempt_id skipped', {
          count: mapped.unattributed,
        });
      }
      if (mapped.invalid > 0) {
        warnOnce('invalid', 'otlp spans without a valid trace or span id skipped', { count: mapped.invalid });
      }
      if (badIds > 0) {
        warnOnce('bad-ids', 'otlp spans whose rollout or attempt id breaks the id rule skipped', { count: badIds });
      }
      if (badRewards > 0) {
        warnOnce('bad-rewards', 'otlp spans with a reward that is not a finite number skipped', { count: badRewards });
      }

      const pairs = new Map<string, [string, string]>();
      for (const span of rewarded)
        pairs.set(`${span.rollout_id}\u0000${span.attempt_id}`, [span.rollout_id, span.attempt_id]);
      call?.authorize?.(pairs.values());
      const present = new Set<string>();
      await Promise.all(
        [...pairs].map(async ([key, [rolloutId, attemptId]]) => {
          if ((await checker.ensure(rolloutId, attemptId)).found) present.add(key);
        }),
      );
      const accepted: SpanInput[] = [];
      let unknown = 0;
      for (const span of rewarded) {
        if (present.has(`${span.rollout_id}\u0000${span.attempt_id}`)) accepted.push(span);
        else unknown++;
      }
      if (unknown > 0) {
        counters.skippedUnknownRollout += unknown;
        warnOnce('unknown', 'otlp spans for unknown rollouts or attempts skipped (rollouts.autoCreate is off)', {
          count: unknown,
        });
      }

      if (accepted.length > 0) {
        const ids = await store.nextSequenceIds(accepted.map((span) => [span.rollout_id, span.attempt_id] as const));
        accepted.forEach((span, i) => {
          span.sequence_id = ids[i]!;
          delete span.attributes[ATTR_SPAN_SEQUENCE_ID];
          delete span.resource.attributes[ATTR_SPAN_SEQUENCE_ID];
        });
      }
      const stored = accepted.length > 0 ? (await store.addManySpans(accepted)).length : 0;
      counters.stored += stored;

      const reasons: string[] = [];
      if (mapped.unattributed > 0) reasons.push(`${mapped.unattributed} without agentlightning.rollout_id/attempt_id`);
      if (unknown > 0) reasons.push(`${unknown} for unknown rollouts or attempts`);
      if (mapped.invalid > 0) reasons.push(`${mapped.invalid} without a valid trace or span id`);
      if (badIds > 0) reasons.push(`${badIds} with a rollout or attempt id outside [A-Za-z0-9_.:@+-]{1,256}`);
      if (badRewards > 0) reasons.push(`${badRewards} with a reward value that is not a finite number`);
      return {
        stored,
        rejected: mapped.unattributed + unknown + mapped.invalid + badIds + badRewards,
        rejectedReason: reasons.length > 0 ? `spans skipped: ${reasons.join(', ')}` : '',
      };
    },
    stats() {
      return { ...counters };
    },
  };
}
