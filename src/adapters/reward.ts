// Reward detection across every format seen in the wild (docs/architecture.md, docs/failure-classes.md#51).
// Readers accept all of them; rollgate itself only ever emits format 1 (see `rewardAttributes`).

import {
  ATTR_AGENTOPS_ENTITY_OUTPUT,
  ATTR_AGENTOPS_TASK_OUTPUT,
  ATTR_LEGACY_REWARD,
  LEGACY_REWARD_SPAN_NAME,
  PRIMARY_REWARD_NAME,
  REWARD_ATTR_PREFIX,
  REWARD_SPAN_NAME,
  rewardNameAttr,
  rewardValueAttr,
} from '../contracts/span-attributes.js';
import type { Attributes, Span } from '../store/core/types.js';
import { maybeParseLiteral } from './literal.js';

export interface RewardDimension {
  readonly name: string;
  readonly value: number;
}

function toFiniteNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/**
 * v0.3 flattened dimensions `agentlightning.reward.<i>.name/value`, ordered by index (index 0 is the
 * primary one). A bare `agentlightning.reward` key (which makes v0.3's reader raise) is tolerated as an
 * unnamed primary value.
 */
export function readRewardDimensions(attrs: Attributes): RewardDimension[] {
  const byIndex = new Map<number, { name?: string; value?: unknown }>();
  let bare: unknown;
  const prefix = `${REWARD_ATTR_PREFIX}.`;
  for (const [key, value] of Object.entries(attrs)) {
    if (key === REWARD_ATTR_PREFIX) {
      bare = value;
      continue;
    }
    if (!key.startsWith(prefix)) continue;
    const [indexText, field] = key.slice(prefix.length).split('.', 2);
    const index = Number(indexText);
    if (!Number.isInteger(index) || index < 0) continue;
    const entry = byIndex.get(index) ?? {};
    if (field === 'name' && typeof value === 'string') entry.name = value;
    else if (field === 'value') entry.value = value;
    byIndex.set(index, entry);
  }
  const dims: RewardDimension[] = [];
  for (const index of [...byIndex.keys()].sort((a, b) => a - b)) {
    const entry = byIndex.get(index);
    const value = toFiniteNumber(entry?.value);
    if (value !== null) dims.push({ name: entry?.name ?? (index === 0 ? PRIMARY_REWARD_NAME : String(index)), value });
  }
  if (dims.length === 0 && bare !== undefined) {
    const value = toFiniteNumber(bare);
    if (value !== null) dims.push({ name: PRIMARY_REWARD_NAME, value });
  }
  return dims;
}

function hasRewardKeys(attrs: Attributes): boolean {
  for (const key of Object.keys(attrs)) if (key.startsWith(REWARD_ATTR_PREFIX)) return true;
  return false;
}

/** AgentOps `{type: "reward", value}` as a dict, a JSON/Python string, or flattened `<key>.type/.value`. */
function readAgentOpsReward(attrs: Readonly<Record<string, unknown>>): { found: boolean; value: number | null } {
  for (const key of [ATTR_AGENTOPS_TASK_OUTPUT, ATTR_AGENTOPS_ENTITY_OUTPUT]) {
    const raw = maybeParseLiteral(attrs[key]);
    if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
      const payload = raw as Record<string, unknown>;
      if (payload.type === 'reward') return { found: true, value: toFiniteNumber(payload.value) };
    }
    if (attrs[`${key}.type`] === 'reward') return { found: true, value: toFiniteNumber(attrs[`${key}.value`]) };
  }
  return { found: false, value: null };
}

/**
 * The primary reward a span carries, or null when it carries none (a null value means "not a reward").
 * Order: v0.3 flattened dimensions, AgentOps payloads, then a `reward` attribute on an annotation span
 * (v0.3) or on a v0.2 `agentlightning.reward` span.
 */
export function getRewardValue(span: Span): number | null {
  const attrs = span.attributes ?? {};
  if (hasRewardKeys(attrs)) {
    const dims = readRewardDimensions(attrs);
    if (dims.length > 0) return dims[0]?.value ?? null;
  }
  const agentOps = readAgentOpsReward(attrs);
  if (agentOps.found && agentOps.value !== null) return agentOps.value;
  if (span.name === REWARD_SPAN_NAME || span.name === LEGACY_REWARD_SPAN_NAME) {
    return toFiniteNumber(attrs[ATTR_LEGACY_REWARD]);
  }
  return null;
}

/** The last reward in list order (callers pass spans in sequence order), or null. */
export function findFinalReward(spans: readonly Span[]): number | null {
  for (let i = spans.length - 1; i >= 0; i--) {
    const span = spans[i];
    if (!span) continue;
    const value = getRewardValue(span);
    if (value !== null) return value;
  }
  return null;
}

/** The only reward format rollgate writes: v0.3 flattened dimensions, primary first. */
export function rewardAttributes(primary: number, extra: readonly RewardDimension[] = []): Attributes {
  const attrs: Attributes = {
    [rewardNameAttr(0)]: PRIMARY_REWARD_NAME,
    [rewardValueAttr(0)]: primary,
  };
  extra.forEach((dim, i) => {
    attrs[rewardNameAttr(i + 1)] = dim.name;
    attrs[rewardValueAttr(i + 1)] = dim.value;
  });
  return attrs;
}
