// Every rollout the runner ends early says why (rollout.failure_reason), through a real gateway in front of the
// engine twin with the openai SDK as the agent: an engine 5xx is upstream_error, a paused gateway's refusal is
// gateway_paused, the agent's own throw is agent_crash, a process agent whose last call hit a 5xx is
// upstream_error, and a runner stop is runner_kill.
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProcessExecutor } from '../../../src/runner/process-executor.js';
import { createRunner, type Runner } from '../../../src/runner/runner.js';
import type { AttemptContext } from '../../../src/runner/types.js';
import type { FailureReason, LightningStore } from '../../../src/store/core/types.js';
import { type GatewayWithMock, startGatewayWithMock } from '../../helpers/gateway.js';

let gw: GatewayWithMock;
let store: LightningStore;
let runners: Runner[];

beforeEach(async () => {
  gw = await startGatewayWithMock();
  store = gw.gateway.store;
  runners = [];
});

afterEach(async () => {
  await Promise.all(runners.map((runner) => runner.close({ graceMs: 0 })));
  await gw.close();
});

function client(ctx: AttemptContext): OpenAI {
  return new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
}

async function ask(ctx: AttemptContext): Promise<void> {
  await client(ctx).chat.completions.create(
    { model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] },
    { signal: ctx.signal },
  );
}

async function reasonAfterRun(agent: (ctx: AttemptContext) => Promise<unknown>): Promise<FailureReason | null> {
  const rollout = await store.enqueueRollout({ input: 'task' });
  const runner = createRunner({
    store,
    gatewayUrl: gw.url,
    workerId: 'w',
    exitWhenIdle: true,
    agent: (_task, ctx) => agent(ctx),
  });
  runners.push(runner);
  await runner.done;
  const done = await store.getRolloutById(rollout.rollout_id);
  expect(done?.status).toBe('failed');
  return done?.failure_reason ?? null;
}

describe('failure reasons recorded by the runner', () => {
  it('an engine 5xx the agent gave up on is upstream_error, not a bad answer', async () => {
    gw.mock.setFault('status=500');
    expect(await reasonAfterRun(ask)).toBe('upstream_error');
  });

  it('a call the paused gateway refused is gateway_paused', async () => {
    const paused = await fetch(`${gw.url}/admin/pause`, { method: 'POST' });
    expect(paused.ok).toBe(true);
    expect(await reasonAfterRun(ask)).toBe('gateway_paused');
    await fetch(`${gw.url}/admin/resume`, { method: 'POST' });
  });

  it("the agent's own exception after a good call is agent_crash", async () => {
    const reason = await reasonAfterRun(async (ctx) => {
      await ask(ctx);
      throw new Error('parse error in the tool output');
    });
    expect(reason).toBe('agent_crash');
  });

  it('a process agent that exits non-zero after its last call hit a 5xx is upstream_error; else agent_crash', async () => {
    const script = `
      const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + process.env.OPENAI_API_KEY },
        body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] }),
      });
      process.exit(res.ok ? 2 : 1);`;
    const runProcess = async (): Promise<FailureReason | null> => {
      const rollout = await store.enqueueRollout({ input: 'task' });
      const runner = createRunner({
        store,
        gatewayUrl: gw.url,
        workerId: 'p',
        exitWhenIdle: true,
        executor: createProcessExecutor({
          command: [process.execPath, '--input-type=module', '-e', script],
          gatewayUrl: gw.url,
        }),
      });
      runners.push(runner);
      await runner.done;
      return (await store.getRolloutById(rollout.rollout_id))?.failure_reason ?? null;
    };
    gw.mock.setFault('status=500');
    expect(await runProcess()).toBe('upstream_error');
    gw.mock.clearFaults();
    expect(await runProcess()).toBe('agent_crash');
  });

  it('a runner stopped under a running attempt records runner_kill', async () => {
    const rollout = await store.enqueueRollout({ input: 'task' });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const runner = createRunner({
      store,
      gatewayUrl: gw.url,
      workerId: 'k',
      agent: (_task, ctx) =>
        new Promise((_resolve, reject) => {
          started();
          ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
        }),
    });
    runners.push(runner);
    await running;
    await runner.close({ graceMs: 0 });
    const done = await store.getRolloutById(rollout.rollout_id);
    expect(done?.status).toBe('failed');
    expect(done?.failure_reason).toBe('runner_kill');
  });
});
