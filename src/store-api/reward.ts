// A reward posted over the v0.3 store API (`POST /v1/agl/rollouts/{rid}/attempts/{aid}/reward`) becomes a reward
// span, the form every reader of rewards already knows (src/adapters/reward.ts). It carries no sequence id: the
// store issues one at arrival, so the reward sorts after the calls it judges.
//
// What a reward value may be is decided here once, for every path that writes one (this route, v1 reward events,
// reward attributes of spans sent over OTLP): a finite number. JSON's `1e999` parses to Infinity and would be
// stored as null; a string or a boolean is not a reward either.
import { randomBytes } from 'node:crypto';
import {
  PRIMARY_REWARD_NAME,
  REWARD_ATTR_PREFIX,
  REWARD_SPAN_NAME,
  rewardNameAttr,
  rewardValueAttr,
} from '../contracts/span-attributes.js';
import { StoreError } from '../store/core/errors.js';
import type { Attributes, LightningStore, Span } from '../store/core/types.js';

export const REWARD_VALUE_RULE = 'expected a finite number';

export function isRewardValue(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

const REWARD_VALUE_KEY = /^agentlightning\.reward\.\d+\.value$/;

/**
 * The first reward attribute of a span (v0.3 `agentlightning.reward.<i>.value`, or a bare `agentlightning.reward`)
 * whose value is not a reward, or null. Other reward formats (AgentOps outputs) are free text and read leniently.
 */
export function badRewardAttribute(attributes: Attributes): string | null {
  for (const [key, value] of Object.entries(attributes)) {
    if ((key === REWARD_ATTR_PREFIX || REWARD_VALUE_KEY.test(key)) && !isRewardValue(value)) return key;
  }
  return null;
}

export interface RewardPost {
  readonly rolloutId: string;
  /** An attempt id, or `latest` for the rollout's latest attempt. */
  readonly attemptId: string;
  /** Default: the primary reward. */
  readonly name?: string | null | undefined;
  readonly value: number;
}

export async function addReward(
  store: Pick<LightningStore, 'getLatestAttempt' | 'addSpan'>,
  reward: RewardPost,
): Promise<Span> {
  const attemptId = await resolveAttemptId(store, reward.rolloutId, reward.attemptId);
  const now = Date.now() / 1000;
  const stored = await store.addSpan({
    rollout_id: reward.rolloutId,
    attempt_id: attemptId,
    trace_id: randomBytes(16).toString('hex'),
    span_id: randomBytes(8).toString('hex'),
    parent_id: null,
    name: REWARD_SPAN_NAME,
    status: { status_code: 'OK' },
    attributes: { [rewardNameAttr(0)]: reward.name ?? PRIMARY_REWARD_NAME, [rewardValueAttr(0)]: reward.value },
    events: [],
    links: [],
    start_time: now,
    end_time: now,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  });
  if (stored === null) throw new StoreError('conflict', 'Reward span collided with an existing span id');
  return stored;
}

async function resolveAttemptId(
  store: Pick<LightningStore, 'getLatestAttempt'>,
  rolloutId: string,
  attemptId: string,
): Promise<string> {
  if (attemptId !== 'latest') return attemptId;
  const latest = await store.getLatestAttempt(rolloutId);
  if (latest === null) {
    throw new StoreError('not_found', `Rollout ${rolloutId} has no attempt`, { param: 'attempt_id' });
  }
  return latest.attempt_id;
}
