// Seed data for the dashboard e2e test: rollouts in every status across three APO-like rounds, one
// featured rollout with a failed and a successful attempt whose LLM spans carry token ids, logprobs and
// messages, reward spans in the v0.3 format, and versioned resources with candidate lineage.
import { randomBytes } from 'node:crypto';
import { rewardAttributes } from '../../../src/adapters/reward.js';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_LOGPROBS_CONTENT,
  ATTR_PROMPT_TOKEN_IDS,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_RESPONSE_TOKEN_IDS,
  ATTR_TOKEN_IDS_STATUS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  REWARD_SPAN_NAME,
  TOKEN_IDS_STATUS_VALUE_OK,
} from '../../../src/contracts/span-attributes.js';
import type { Attributes, LightningStore, RolloutMode, SpanInput } from '../../../src/store/core/types.js';

export const FEATURED_ROLLOUT = 'ro-demo-featured';
export const FEATURED_REWARD = 0.75;
export const MODEL = 'qwen2.5-7b-instruct';
export const QUESTION = 'What is 17 * 23?';
/** The answer the featured call gives, token by token, with each token's logprob. */
export const ANSWER_TOKENS = [
  { id: 1131, text: '17', logprob: -0.01 },
  { id: 353, text: ' *', logprob: -0.05 },
  { id: 220, text: ' 23', logprob: -0.02 },
  { id: 284, text: ' =', logprob: -0.9 },
  { id: 391, text: ' 391', logprob: -3.2 },
  { id: 13, text: '.', logprob: -0.3 },
] as const;
export const PROMPT_TOKEN_IDS = Array.from({ length: 48 }, (_, i) => 151_644 - i * 37);
/** Rollouts per round and their mean reward: rising, as a working algorithm run would show. */
export const ROUNDS = [
  { round: 1, rewards: [0.2, 0.3, 0.4, 0.3] },
  { round: 2, rewards: [0.4, 0.5, 0.6, 0.5] },
  { round: 3, rewards: [0.7, 0.8, 0.9, 0.8] },
] as const;
export const RESOURCES = {
  base: 'apo-demo-base',
  v1: 'apo-demo-v1',
  v2: 'apo-demo-v2',
} as const;

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

function span(options: {
  rid: string;
  aid: string;
  name: string;
  startS: number;
  durationS: number;
  attributes: Attributes;
  isError?: boolean;
}): SpanInput {
  const traceId = hex(16);
  const spanId = hex(8);
  return {
    rollout_id: options.rid,
    attempt_id: options.aid,
    trace_id: traceId,
    span_id: spanId,
    parent_id: null,
    name: options.name,
    status: options.isError
      ? { status_code: 'ERROR', description: 'upstream returned 503: no capacity' }
      : { status_code: 'UNSET' },
    attributes: options.attributes,
    events: [],
    links: [],
    start_time: options.startS,
    end_time: options.startS + options.durationS,
    context: { trace_id: traceId, span_id: spanId, is_remote: false, trace_state: {} },
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

function llmAttributes(options: {
  question: string;
  answer: string;
  tokens: readonly { id: number; text: string; logprob: number }[];
}): Attributes {
  return {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
    [ATTR_GEN_AI_REQUEST_MODEL]: MODEL,
    [ATTR_GEN_AI_RESPONSE_MODEL]: MODEL,
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: PROMPT_TOKEN_IDS.length,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: options.tokens.length,
    [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['stop'],
    [ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]: JSON.stringify([
      { type: 'text', content: 'You are a careful arithmetic tutor.' },
    ]),
    [ATTR_GEN_AI_INPUT_MESSAGES]: JSON.stringify([
      { role: 'user', parts: [{ type: 'text', content: options.question }] },
    ]),
    [ATTR_GEN_AI_OUTPUT_MESSAGES]: JSON.stringify([
      { role: 'assistant', parts: [{ type: 'text', content: options.answer }], finish_reason: 'stop' },
    ]),
    [ATTR_PROMPT_TOKEN_IDS]: PROMPT_TOKEN_IDS,
    [ATTR_RESPONSE_TOKEN_IDS]: options.tokens.map((t) => t.id),
    [ATTR_RESPONSE_LOGPROBS]: options.tokens.map((t) => t.logprob),
    [ATTR_LOGPROBS_CONTENT]: JSON.stringify(
      options.tokens.map((t) => ({
        token: t.text,
        logprob: t.logprob,
        bytes: [...Buffer.from(t.text)],
        top_logprobs: [
          { token: t.text, logprob: t.logprob },
          { token: `${t.text}0`, logprob: t.logprob - 1.5 },
        ],
      })),
    ),
    [ATTR_TOKEN_IDS_STATUS]: TOKEN_IDS_STATUS_VALUE_OK,
  };
}

async function finishedRollout(
  store: LightningStore,
  options: {
    rid: string;
    mode: RolloutMode;
    round: number;
    reward: number;
    resourcesId: string;
    worker: string;
    t0: number;
  },
): Promise<void> {
  const { attempt } = await store.startRollout({
    rollout_id: options.rid,
    input: { question: `task ${options.rid}` },
    mode: options.mode,
    resources_id: options.resourcesId,
    metadata: { algorithm: 'apo', purpose: `r${options.round}_${options.mode === 'train' ? 'train' : 'val_batch'}` },
    worker_id: options.worker,
  });
  const tokens = ANSWER_TOKENS.slice(0, 3);
  await store.addSpan(
    span({
      rid: options.rid,
      aid: attempt.attempt_id,
      name: `chat ${MODEL}`,
      startS: options.t0,
      durationS: 0.8,
      attributes: llmAttributes({ question: 'Add 2 and 3.', answer: '5', tokens }),
    }),
  );
  await store.addSpan(
    span({
      rid: options.rid,
      aid: attempt.attempt_id,
      name: REWARD_SPAN_NAME,
      startS: options.t0 + 0.9,
      durationS: 0,
      attributes: rewardAttributes(options.reward),
    }),
  );
  await store.updateAttempt(options.rid, attempt.attempt_id, { status: 'succeeded' });
}

export interface SeededDashboard {
  readonly totalRollouts: number;
  readonly failedRollouts: number;
  /** Span ids of the featured rollout's second attempt, in sequence order (LLM, LLM, reward). */
  readonly featuredSpanIds: readonly string[];
}

export async function seedDashboard(store: LightningStore): Promise<SeededDashboard> {
  const now = Date.now() / 1000;
  const template = 'Solve the problem step by step: {question}';
  await store.updateResources(RESOURCES.base, {
    prompt: { resource_type: 'prompt_template', template, engine: 'f-string' },
  });
  await store.updateResources(RESOURCES.v1, {
    prompt: {
      resource_type: 'prompt_template',
      template: `${template}\nAnswer with the number only.`,
      engine: 'f-string',
      metadata: {
        version: 'v1',
        parent_version: 'v0',
        parent_resources_id: RESOURCES.base,
        round: 1,
        scores: { r1_val_batch: 0.5 },
      },
    },
  });
  await store.updateResources(RESOURCES.v2, {
    prompt: {
      resource_type: 'prompt_template',
      template: `${template}\nShow the multiplication, then the result on its own line.`,
      engine: 'f-string',
      metadata: {
        version: 'v2',
        parent_version: 'v1',
        parent_resources_id: RESOURCES.v1,
        round: 2,
        scores: { r2_val_batch: 0.6, full_val: 0.8 },
      },
    },
  });

  let total = 0;
  let failed = 0;
  const resourcesForRound = [RESOURCES.base, RESOURCES.v1, RESOURCES.v2];
  for (const { round, rewards } of ROUNDS) {
    for (const [i, reward] of rewards.entries()) {
      await finishedRollout(store, {
        rid: `ro-r${round}-${i}`,
        mode: i % 2 === 0 ? 'train' : 'val',
        round,
        reward,
        resourcesId: resourcesForRound[round - 1] ?? RESOURCES.base,
        worker: `worker-${i % 3}`,
        t0: now - 600 + round * 120 + i * 5,
      });
      total++;
    }
  }

  // Failed rollouts (the agent crashed: no reward), running ones, and queued ones.
  for (let i = 0; i < 4; i++) {
    const { attempt } = await store.startRollout({
      rollout_id: `ro-crash-${i}`,
      input: { i },
      mode: 'train',
      worker_id: 'worker-2',
    });
    await store.addSpan(
      span({
        rid: `ro-crash-${i}`,
        aid: attempt.attempt_id,
        name: `chat ${MODEL}`,
        startS: now - 60,
        durationS: 2,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
          [ATTR_GEN_AI_REQUEST_MODEL]: MODEL,
        },
        isError: true,
      }),
    );
    await store.updateAttempt(`ro-crash-${i}`, attempt.attempt_id, { status: 'failed' });
    total++;
    failed++;
  }
  for (let i = 0; i < 3; i++) {
    await store.startRollout({ rollout_id: `ro-live-${i}`, input: { i }, mode: 'val', worker_id: `worker-${i}` });
    total++;
  }
  await store.enqueueManyRollouts(
    Array.from({ length: 11 }, (_, i) => ({
      rollout_id: `ro-queued-${String(i).padStart(2, '0')}`,
      input: { i },
      mode: 'train' as const,
    })),
  );
  total += 11;

  // The featured rollout: attempt 1 fails after one call, attempt 2 makes two calls and is rewarded.
  const first = await store.startRollout({
    rollout_id: FEATURED_ROLLOUT,
    input: { question: QUESTION, answer: 391 },
    mode: 'train',
    resources_id: RESOURCES.v2,
    config: { max_attempts: 2, retry_condition: ['failed'] },
    metadata: { algorithm: 'apo', purpose: 'r3_train' },
    worker_id: 'worker-a',
  });
  await store.addSpan(
    span({
      rid: FEATURED_ROLLOUT,
      aid: first.attempt.attempt_id,
      name: `chat ${MODEL}`,
      startS: now - 30,
      durationS: 1.5,
      attributes: llmAttributes({ question: QUESTION, answer: '17 * 23 = 381.', tokens: ANSWER_TOKENS }),
    }),
  );
  await store.updateAttempt(FEATURED_ROLLOUT, first.attempt.attempt_id, { status: 'failed' });
  const second = await store.startAttempt(FEATURED_ROLLOUT, { worker_id: 'worker-b' });
  const aid = second.attempt.attempt_id;
  const spans = [
    span({
      rid: FEATURED_ROLLOUT,
      aid,
      name: `chat ${MODEL}`,
      startS: now - 20,
      durationS: 2.4,
      attributes: llmAttributes({ question: QUESTION, answer: '17 * 23 = 391.', tokens: ANSWER_TOKENS }),
    }),
    span({
      rid: FEATURED_ROLLOUT,
      aid,
      name: `chat ${MODEL}`,
      startS: now - 17,
      durationS: 1.2,
      attributes: llmAttributes({ question: 'Check: 391 / 23 = ?', answer: '17', tokens: ANSWER_TOKENS.slice(0, 1) }),
    }),
    span({
      rid: FEATURED_ROLLOUT,
      aid,
      name: REWARD_SPAN_NAME,
      startS: now - 15.5,
      durationS: 0,
      attributes: rewardAttributes(FEATURED_REWARD),
    }),
  ];
  for (const s of spans) await store.addSpan(s);
  await store.updateAttempt(FEATURED_ROLLOUT, aid, { status: 'succeeded' });
  total++;

  return { totalRollouts: total, failedRollouts: failed, featuredSpanIds: spans.map((s) => s.span_id) };
}

/** One more finished rollout in a new round, for the live view to pick up. */
export async function addRound(store: LightningStore, options: { round: number; reward: number }): Promise<void> {
  await finishedRollout(store, {
    rid: `ro-r${options.round}-live`,
    mode: 'val',
    round: options.round,
    reward: options.reward,
    resourcesId: RESOURCES.v2,
    worker: 'worker-0',
    t0: Date.now() / 1000,
  });
}

/**
 * A rollout longer than one page of the store API's spans (500): `calls` LLM calls, then its final reward, which
 * only a reader of every page (or the store's reward route) sees.
 */
export async function seedLongRollout(
  store: LightningStore,
  options: { readonly rid: string; readonly calls: number; readonly reward: number },
): Promise<void> {
  const { attempt } = await store.startRollout({ rollout_id: options.rid, input: { question: 'long' } });
  const tokens = ANSWER_TOKENS.slice(0, 3);
  const t0 = 1_700_000_000;
  for (let i = 0; i < options.calls; i++) {
    await store.addSpan(
      span({
        rid: options.rid,
        aid: attempt.attempt_id,
        name: `chat ${MODEL}`,
        startS: t0 + i,
        durationS: 0.5,
        attributes: llmAttributes({ question: `Step ${i}.`, answer: '5', tokens }),
      }),
    );
  }
  await store.addSpan(
    span({
      rid: options.rid,
      aid: attempt.attempt_id,
      name: REWARD_SPAN_NAME,
      startS: t0 + options.calls,
      durationS: 0,
      attributes: rewardAttributes(options.reward),
    }),
  );
  await store.updateAttempt(options.rid, attempt.attempt_id, { status: 'succeeded' });
}
