// The example agents of docs/runner.md (examples/agents/), unmodified, under `rollgate runner` against a real
// gateway and the vLLM stand-in: each LLM call is recorded as a span on the attempt's rollout, and the reward lands
// after it.
import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_PROMPT_TOKEN_IDS, REWARD_SPAN_NAME, rewardValueAttr } from '../../src/contracts/span-attributes.js';
import type { Attempt, LightningStore, Rollout, Span } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { findPython, IS_CI, PYTHON_CLIENT_SRC } from '../helpers/python.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const MODEL = 'mock-model';

// The Python agent needs only the standard library and the rollgate client (clients/python, on PYTHONPATH).
const python = findPython();

/** Generous: each runner and each tsx agent is a fresh Node process, slow on a loaded 2-core machine. */
const E2E_TIMEOUT_MS = 90_000;

let vllm: MockVllm;
let gw: TestGateway;
let store: LightningStore;

beforeEach(async () => {
  vllm = await startMockVllm({
    model: MODEL,
    respond: (prompt) => (prompt.text.includes('2+2') ? 'It is 4.' : 'I do not know.'),
  });
  gw = await startTestGateway({ models: [{ name: MODEL, backends: [{ url: vllm.url }] }] });
  store = gw.gateway.store;
});

afterEach(async () => {
  await gw.close();
  await vllm.close();
});

async function runExample(agent: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli.ts',
      'runner',
      '--gateway',
      gw.url,
      '--model',
      MODEL,
      '--exit-when-idle',
      '--',
      ...agent,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, output).toBe(0);
}

async function checkRollout(rollout: Rollout, expectedReward: number): Promise<void> {
  const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items as [Attempt];
  expect(attempt.status).toBe('succeeded');
  const spans: Span[] = (await store.querySpans(rollout.rollout_id)).items;
  const llm = spans.filter((span) => span.name !== REWARD_SPAN_NAME);
  const rewards = spans.filter((span) => span.name === REWARD_SPAN_NAME);
  expect(llm).toHaveLength(1);
  expect(llm[0]?.attempt_id).toBe(attempt.attempt_id);
  expect(llm[0]!.attributes[ATTR_PROMPT_TOKEN_IDS]).toEqual(expect.arrayContaining([expect.any(Number)]));
  expect(rewards.map((span) => span.attributes[rewardValueAttr(0)])).toEqual([expectedReward]);
  // The reward is judged after the call, so it sorts after it.
  expect(rewards[0]!.sequence_id).toBeGreaterThan(llm[0]!.sequence_id);
}

describe('example agents under rollgate runner', () => {
  it(
    'runs examples/agents/ts-agent.ts: one recorded LLM call and a reward per rollout',
    async () => {
      const [right, wrong] = await store.enqueueManyRollouts([
        { input: { question: 'What is 2+2?', answer: '4' } },
        { input: { question: 'What is 3+3?', answer: '6' } },
      ]);
      await runExample([process.execPath, '--import', 'tsx', 'examples/agents/ts-agent.ts']);
      await checkRollout(right!, 1);
      await checkRollout(wrong!, 0);
    },
    E2E_TIMEOUT_MS,
  );

  it.skipIf(python === null && !IS_CI)(
    'runs examples/agents/python-agent.py (python3 and the rollgate client only)',
    async () => {
      expect(python, 'python3 (3.10+) is required in CI: .ci/run installs it').not.toBeNull();
      const [right, wrong] = await store.enqueueManyRollouts([
        { input: { question: 'What is 2+2?', answer: '4' } },
        { input: { question: 'What is 3+3?', answer: '6' } },
      ]);
      const env = { ...process.env, PYTHONPATH: PYTHON_CLIENT_SRC, PYTHONDONTWRITEBYTECODE: '1' };
      await runExample([python?.command ?? 'python3', 'examples/agents/python-agent.py'], env);
      await checkRollout(right!, 1);
      await checkRollout(wrong!, 0);
    },
    E2E_TIMEOUT_MS,
  );
});
