// A reference trainer that speaks rollgate's trainer protocol (routes/rl.ts) and trains the tiny policy
// (tiny-policy.ts) with the policy gradient: for every generated token (mask 1) of every sample,
// theta[state] += lr * advantage * (onehot(action) - softmax(theta[state])) / samples. It recomputes each
// recorded logprob under the weights it last posted (the ones that produced the batch) and keeps the
// largest difference, writes the new weights to a file, and posts {version, batch_ids, lora_path}.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Batch } from '../../src/algorithms/rl/batch.js';
import { ACTION_IDS, actionState, nextTokenDistribution, type TinyPolicyWeights } from './tiny-policy.js';

export interface ReferenceTrainerOptions {
  readonly gatewayUrl: string;
  /** Admin key when the gateway has auth on (/v1/rl/* needs admin scope). */
  readonly apiKey?: string;
  /** Folder for the weight files the policy server loads. */
  readonly weightsDir: string;
  readonly learningRate: number;
  readonly initialWeights?: TinyPolicyWeights;
  readonly initialVersion?: number;
  /** Stop after this many trained batches. */
  readonly maxBatches: number;
  /** Stop once a batch's mean reward reaches this. */
  readonly stopAtReward?: number;
  /** Called with each batch before training; returning false leaves it unacknowledged (simulated crash). */
  readonly beforeTrain?: (batch: Batch, delivery: number) => boolean;
  readonly signal?: AbortSignal;
}

export interface TrainedBatch {
  readonly batchId: string;
  readonly delivery: number;
  readonly meanReward: number | null;
  readonly trainedVersion: number;
  readonly rolloutIds: string[];
  readonly samples: number;
  /** Rollouts of the step, and why some of them are not in the batch. */
  readonly rollouts: number;
  readonly dropped: Batch['stats']['dropped'];
  /** The version the trainer had posted when the batch was made, and the versions its samples carry. */
  readonly producedBy: number;
  readonly sampleVersions: number[];
  /** Samples whose mask has a 0 between two 1s (a masked gap between merged turns). */
  readonly masksWithGap: number;
}

function hasMaskedGap(mask: readonly number[]): boolean {
  const first = mask.indexOf(1);
  const last = mask.lastIndexOf(1);
  return first >= 0 && mask.slice(first, last).includes(0);
}

export interface ReferenceTrainerResult {
  readonly batches: TrainedBatch[];
  /** Largest |recorded logprob - recomputed logprob| over every generated token of every batch. */
  readonly maxLogprobError: number;
  readonly tokensChecked: number;
  readonly weights: TinyPolicyWeights;
  readonly version: number;
}

function authHeaders(options: ReferenceTrainerOptions): Record<string, string> {
  return options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
}

async function nextBatch(options: ReferenceTrainerOptions): Promise<{ batch: Batch; delivery: number } | null> {
  const response = await fetch(`${options.gatewayUrl}/v1/rl/batches/next?timeout_s=60`, {
    headers: authHeaders(options),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (response.status === 204) return null;
  if (!response.ok) throw new Error(`GET /v1/rl/batches/next: HTTP ${response.status} ${await response.text()}`);
  return { batch: (await response.json()) as Batch, delivery: Number(response.headers.get('x-rollgate-delivery')) };
}

/** One policy-gradient step; returns the new weights and the largest logprob error seen in the batch. */
export function policyGradientStep(
  weights: TinyPolicyWeights,
  batch: Batch,
  learningRate: number,
): { weights: TinyPolicyWeights; maxLogprobError: number; tokensChecked: number } {
  const theta: Record<string, number[]> = {};
  for (const [key, row] of Object.entries(weights.theta)) theta[key] = [...row];
  let maxLogprobError = 0;
  let tokensChecked = 0;
  const n = batch.samples.length;
  for (const sample of batch.samples) {
    const context = [...sample.prompt_ids];
    for (let i = 0; i < sample.response_ids.length; i++) {
      const token = sample.response_ids[i] ?? -1;
      if (sample.response_mask[i] === 1) {
        const dist = nextTokenDistribution(weights, context);
        const k = dist.ids.indexOf(token);
        const recomputed = k < 0 ? Number.NEGATIVE_INFINITY : (dist.logprobs[k] ?? Number.NEGATIVE_INFINITY);
        const recorded = sample.logprobs?.[i] ?? Number.NaN;
        const error = Math.abs(recorded - recomputed);
        maxLogprobError = Number.isNaN(error) ? Number.POSITIVE_INFINITY : Math.max(maxLogprobError, error);
        tokensChecked += 1;
        const state = actionState(context);
        if (state.kind === 'action' && k >= 0) {
          const row = theta[state.key] ?? ACTION_IDS.map(() => 0);
          theta[state.key] = row;
          for (let a = 0; a < row.length; a++) {
            const p = Math.exp(dist.logprobs[a] ?? Number.NEGATIVE_INFINITY);
            row[a] = (row[a] ?? 0) + (learningRate * sample.advantage * ((a === k ? 1 : 0) - p)) / n;
          }
        }
      }
      context.push(token);
    }
  }
  return { weights: { theta }, maxLogprobError, tokensChecked };
}

export async function runReferenceTrainer(options: ReferenceTrainerOptions): Promise<ReferenceTrainerResult> {
  let weights = options.initialWeights ?? { theta: {} };
  let version = options.initialVersion ?? 0;
  let maxLogprobError = 0;
  let tokensChecked = 0;
  const batches: TrainedBatch[] = [];
  while (batches.length < options.maxBatches && !options.signal?.aborted) {
    const next = await nextBatch(options);
    if (next === null) continue;
    const { batch, delivery } = next;
    if (options.beforeTrain && !options.beforeTrain(batch, delivery)) continue;
    const record = {
      batchId: batch.batch_id,
      delivery,
      meanReward: batch.stats.mean_reward,
      trainedVersion: version,
      rolloutIds: batch.samples.map((s) => s.rollout_id),
      samples: batch.samples.length,
      rollouts: batch.stats.rollouts,
      dropped: batch.stats.dropped,
      producedBy: version,
      sampleVersions: batch.samples.map((s) => s.model_version),
      masksWithGap: batch.samples.filter((s) => hasMaskedGap(s.response_mask)).length,
    };
    if (batch.samples.length === 0) {
      // Nothing to learn from (every group had equal rewards): acknowledge without new weights.
      const ack = await fetch(`${options.gatewayUrl}/v1/rl/batches/${encodeURIComponent(batch.batch_id)}/ack`, {
        method: 'POST',
        headers: authHeaders(options),
      });
      if (!ack.ok) throw new Error(`POST ack: HTTP ${ack.status} ${await ack.text()}`);
      batches.push(record);
      if (options.stopAtReward !== undefined && (batch.stats.mean_reward ?? 0) >= options.stopAtReward) break;
      continue;
    }
    const step = policyGradientStep(weights, batch, options.learningRate);
    maxLogprobError = Math.max(maxLogprobError, step.maxLogprobError);
    tokensChecked += step.tokensChecked;
    weights = step.weights;
    version += 1;
    const path = join(options.weightsDir, `weights-v${version}.json`);
    await writeFile(path, JSON.stringify(weights));
    const response = await fetch(`${options.gatewayUrl}/v1/rl/weights`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders(options) },
      body: JSON.stringify({ version, batch_ids: [batch.batch_id], lora_path: path, lora_name: 'policy' }),
    });
    if (!response.ok) throw new Error(`POST /v1/rl/weights: HTTP ${response.status} ${await response.text()}`);
    batches.push({ ...record, trainedVersion: version });
    if (options.stopAtReward !== undefined && (batch.stats.mean_reward ?? 0) >= options.stopAtReward) break;
  }
  return { batches, maxLogprobError, tokensChecked, weights, version };
}
