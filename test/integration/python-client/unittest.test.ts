// Runs the Python client's own unittests (clients/python/tests) from `npm test`, against what only the
// TypeScript side can provide: batches encoded by the gateway's encoder, a policy-gradient step computed by the
// reference trainer, and a real gateway (auth on, in front of the vLLM stand-in) whose trainer hub holds the
// fixture batches. Fails when any Python test fails; in CI also when Python or NumPy is missing.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Batch, type BatchSample, emptyDropCounts } from '../../../src/algorithms/rl/batch.js';
import { encodeBatch } from '../../../src/algorithms/rl/batch-codec.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { findPython, IS_CI, PYTHON_CLIENT_DIR, runPython } from '../../helpers/python.js';
import { END_TOKEN_ID, type MockVllm, renderChatPrompt, startMockVllm, tokenize } from '../../servers/mock-vllm.js';
import { policyGradientStep } from '../../servers/reference-trainer.js';
import { ACTION_IDS, actionState, nextTokenDistribution, type TinyPolicyWeights } from '../../servers/tiny-policy.js';

const ADMIN_KEY = 'python-client-admin-key-0123456789';
const MODEL = 'mock-model';
const python = findPython();

function sample(overrides: Partial<BatchSample> & Pick<BatchSample, 'rollout_id'>): BatchSample {
  return {
    group_id: 'g0',
    prompt_ids: [1, 2, 3],
    response_ids: [4, 5],
    response_mask: [1, 1],
    logprobs: [-0.25, -1.5],
    reward: 1,
    advantage: 0.5,
    model_version: 0,
    sequence_ids: [1],
    ...overrides,
  };
}

function batch(id: string, samples: BatchSample[], step = 0): Batch {
  const rewards = samples.map((s) => s.reward);
  return {
    batch_id: id,
    step,
    model_version: 2,
    advantage_estimator: 'grpo',
    created_at: 1_760_000_000.125,
    samples,
    stats: {
      rollouts: samples.length + 1,
      groups: 2,
      mean_reward: rewards.length === 0 ? null : rewards.reduce((a, b) => a + b, 0) / rewards.length,
      dropped: { ...emptyDropCounts(), no_signal_rollouts: 1, logprobs_floor: 1 },
    },
  };
}

/** Lengthens the batch id until the header needs `pad` zero bytes before the arrays (8 + H ≡ 8 - pad mod 8). */
function withHeaderPadding(b: Batch, pad: number): Batch {
  for (let extra = 0; extra < 8; extra++) {
    const candidate = { ...b, batch_id: `${b.batch_id}${'x'.repeat(extra)}` };
    const headerLength = new DataView(encodeBatch(candidate).buffer).getUint32(4, true);
    if ((8 - ((8 + headerLength) % 8)) % 8 === pad) return candidate;
  }
  throw new Error('unreachable: eight lengths cover every residue');
}

/** Edge cases of the binary layout, each published to the hub and written as .bin (TS encoder) + .json. */
function fixtureBatches(): Batch[] {
  const typical = batch('typical', [
    // Two merged turns: an observation between them is masked out (0) with logprob 0.0.
    sample({
      rollout_id: 'ro-ä✓-1',
      prompt_ids: [0x110001, 116, 97, 115, 107, 0x110004, 0x110002],
      response_ids: [97, END_TOKEN_ID, 0x110001, 111, 0x110004, 0x110002, 98, END_TOKEN_ID],
      response_mask: [1, 1, 0, 0, 0, 0, 1, 1],
      logprobs: [-2.772588722239781, 0, 0, 0, 0, 0, -0.1234567890123, 0],
      reward: 1,
      advantage: 1.224744871391589,
    }),
    sample({ rollout_id: 'ro-2', reward: 0, advantage: -1.224744871391589, sequence_ids: [3, 4] }),
    sample({ rollout_id: 'ro-3', group_id: 'g1', prompt_ids: [151_669, 2_147_483_647], model_version: 1 }),
  ]);
  const mixed = batch(
    'mixed',
    [
      sample({ rollout_id: 'ro-no-logprobs', logprobs: null, response_ids: [7, 8, 9], response_mask: [1, 1, 1] }),
      sample({ rollout_id: 'ro-empty-response', response_ids: [], response_mask: [], logprobs: [] }),
      sample({ rollout_id: 'ro-one', response_ids: [10], response_mask: [1], logprobs: [-3.5e-8] }),
    ],
    1,
  );
  // Fields a newer gateway may add: the client must keep them, not choke on them.
  const futureSample = { ...sample({ rollout_id: 'ro-f' }), turn_count: 2 };
  const future = { ...batch('future', [futureSample], 2), trainer_hint: 'x' };
  // A call that spanned a weight swap: per-token versions, present on one sample and absent on the other.
  const versions = batch(
    'versions',
    [
      sample({ rollout_id: 'ro-v1', response_ids: [5, 6, 7], response_mask: [1, 1, 1], logprobs: [-1, -2, -3] }),
      {
        ...sample({ rollout_id: 'ro-v2', response_ids: [8, 9, 10], response_mask: [1, 0, 1], logprobs: [-1, 0, -2] }),
        model_version: 4,
        token_versions: [4, 4, 5],
      },
    ],
    8,
  );
  const empty = batch('empty', [], 3);
  // Three response tokens: the mask's zero padding to 4 is 1 byte here, 3 in `typical`, 0 in `mixed`.
  const threeTokens = { response_ids: [1, 2, 3], response_mask: [1, 1, 0], logprobs: [-0.25, -1.5, 0] };
  const padded = [0, 3, 7].map((pad, i) =>
    withHeaderPadding(batch(`pad${pad}`, [sample({ rollout_id: `ro-pad-${i}`, ...threeTokens })], 4 + i), pad),
  );
  return [typical, mixed, future, versions, empty, ...padded];
}

/** A two-task, two-turn batch from the tiny policy and the reference trainer's update of it. */
function policyGradientFixture(): Record<string, unknown> {
  const weights: TinyPolicyWeights = {
    theta: {
      'task 0|0': ACTION_IDS.map((_, i) => (i % 5) * 0.3 - 0.4),
      'task 1|1': ACTION_IDS.map((_, i) => Math.sin(i)),
    },
  };
  const samples: BatchSample[] = [];
  const states: Array<{ context: number[]; state: string | null }> = [];
  const advantages = [1.1, -0.7, 0.4, -0.8];
  for (let n = 0; n < 4; n++) {
    const task = n % 2;
    const first = [{ role: 'user' as const, content: `task ${task}` }];
    const actions = [ACTION_IDS[(n * 3) % 16] ?? 97, ACTION_IDS[(n * 7 + 1) % 16] ?? 98];
    const promptIds = tokenize(renderChatPrompt(first));
    const secondPrompt = tokenize(
      renderChatPrompt([
        ...first,
        { role: 'assistant', content: String.fromCodePoint(actions[0] ?? 97) },
        { role: 'user', content: 'observation 0' },
      ]),
    );
    const glue = secondPrompt.slice(promptIds.length + 2);
    const responseIds = [actions[0] ?? 97, END_TOKEN_ID, ...glue, actions[1] ?? 98, END_TOKEN_ID];
    const mask = [1, 1, ...glue.map(() => 0), 1, 1];
    const context = [...promptIds];
    const logprobs = responseIds.map((id, i) => {
      const dist = nextTokenDistribution(weights, context);
      const state = actionState(context);
      states.push({ context: [...context], state: state.kind === 'action' ? state.key : null });
      context.push(id);
      if (mask[i] === 0) return 0;
      const k = dist.ids.indexOf(id);
      // One recorded value off by 1e-4, so the reported logprob error is not trivially zero.
      return (dist.logprobs[k] ?? 0) + (n === 2 && i === 0 ? 1e-4 : 0);
    });
    samples.push({
      rollout_id: `ro-pg-${n}`,
      group_id: `g${task}`,
      prompt_ids: promptIds,
      response_ids: responseIds,
      response_mask: mask,
      logprobs,
      reward: advantages[n]! > 0 ? 1 : 0,
      advantage: advantages[n] ?? 0,
      model_version: 0,
      sequence_ids: [2 * n + 1, 2 * n + 2],
    });
  }
  const pgBatch = batch('pg', samples);
  const learningRate = 16;
  const step = policyGradientStep(weights, pgBatch, learningRate);
  return {
    learning_rate: learningRate,
    weights_in: weights,
    batch: pgBatch,
    weights_out: step.weights,
    max_logprob_error: step.maxLogprobError,
    tokens_checked: step.tokensChecked,
    states: states.filter((_, i) => i % 3 === 0),
    binary: encodeBatch(pgBatch),
  };
}

describe.skipIf(python === null && !IS_CI)('Python client (clients/python) unittests', () => {
  let dir: string;
  let vllm: MockVllm;
  let gw: TestGateway;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-python-client-'));
    await mkdir(join(dir, 'batches'));
    const batches = fixtureBatches();
    for (const b of batches) {
      await writeFile(join(dir, 'batches', `${b.batch_id}.bin`), encodeBatch(b));
      await writeFile(join(dir, 'batches', `${b.batch_id}.json`), JSON.stringify(b));
    }
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ batches: batches.map((b) => b.batch_id) }));
    const { binary, ...pg } = policyGradientFixture();
    await writeFile(join(dir, 'policy-gradient.json'), JSON.stringify(pg));
    await writeFile(join(dir, 'policy-gradient.bin'), binary as Uint8Array);

    vllm = await startMockVllm({
      model: MODEL,
      respond: (prompt) => (prompt.text.includes('2+2') ? 'It is 4.' : 'I do not know.'),
    });
    gw = await startTestGateway({
      auth: { adminKeys: [ADMIN_KEY] },
      models: [{ name: MODEL, backends: [{ url: vllm.url }] }],
    });
    for (const b of batches) gw.gateway.rlHub.publish(b);
  });

  afterAll(async () => {
    await gw?.close();
    await vllm?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pass (binary layout vs the TS encoder, error mapping, redelivery, retries, store, agent, recipe)', {
    timeout: 120_000,
  }, async () => {
    expect(python, 'python3 (3.10+) is required in CI: .ci/run installs it').not.toBeNull();
    if (python === null) return;
    if (IS_CI) expect(python.hasNumpy, `NumPy is required in CI (${python.command})`).toBe(true);
    const run = await runPython({
      python,
      args: ['-m', 'unittest', '-v'],
      cwd: PYTHON_CLIENT_DIR,
      env: {
        ROLLGATE_TEST_FIXTURES: dir,
        ROLLGATE_TEST_GATEWAY_URL: gw.url,
        ROLLGATE_TEST_ADMIN_KEY: ADMIN_KEY,
        ROLLGATE_TEST_MODEL: MODEL,
        // Everything the tests need is provided here: nothing may be skipped, except NumPy outside CI.
        ROLLGATE_TEST_STRICT: python.hasNumpy || IS_CI ? '1' : '0',
      },
    });
    const report = `${python.command} ${python.version} (numpy: ${python.hasNumpy})\n${run.stderr}`;
    expect(run.code, report).toBe(0);
    const summary = /Ran (\d+) tests?/.exec(run.stderr);
    expect(Number(summary?.[1] ?? 0), report).toBeGreaterThanOrEqual(30);
    if (python.hasNumpy) expect(run.stderr, report).not.toMatch(/skipped=/);
  });
});
