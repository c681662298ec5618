// docs/failure-classes.md#56 (timeouts counted and cancelled), the evaluate built-in and its report.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluateTasks } from '../../../src/algorithms/evaluation.js';
import { createStoreOnlyGatewayControl } from '../../../src/algorithms/gateway-control.js';
import { startAlgorithms } from '../../../src/algorithms/start.js';
import { silentLogger } from '../../../src/logger.js';
import type { JsonValue } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { withFakeWorker } from './fake-worker.js';

const sink = { write: () => true, isTTY: false };

describe('evaluateTasks', () => {
  let inner: MemoryStore;
  beforeEach(() => {
    inner = new MemoryStore();
  });
  afterEach(async () => {
    await inner.close();
  });

  const tasks: JsonValue[] = [{ n: 1 }, { n: 2 }, { n: 3, hang: true }, { n: 4 }];
  const handler = (task: JsonValue) => ((task as { hang?: boolean }).hang ? ('hang' as const) : 1);

  it('counts a hung rollout as 0 and cancels it', async () => {
    const { store } = withFakeWorker(inner, handler);
    const res = await inner.addResources({
      p: { resource_type: 'prompt_template', template: 'x', engine: 'f-string' },
    });
    const result = await evaluateTasks({
      store,
      tasks,
      resourcesId: res.resources_id,
      mode: 'val',
      timeoutS: 0.3,
      timeoutPolicy: 'zero',
      signal: new AbortController().signal,
    });
    expect(result.score).toBe(0.75);
    expect(result.timedOut).toBe(1);
    const hung = result.results[2];
    expect(hung?.timedOut).toBe(true);
    expect((await inner.getRolloutById(hung?.rolloutId ?? ''))?.status).toBe('cancelled');
    for (const r of result.results) {
      expect((await inner.getRolloutById(r.rolloutId))?.resources_id).toBe(res.resources_id);
    }
  });

  it('leaves timed-out tasks out of the mean under the exclude policy, still flagged', async () => {
    const { store } = withFakeWorker(inner, handler);
    const result = await evaluateTasks({
      store,
      tasks,
      resourcesId: null,
      mode: 'val',
      timeoutS: 0.3,
      timeoutPolicy: 'exclude',
      signal: new AbortController().signal,
    });
    expect(result.score).toBe(1);
    expect(result.timedOut).toBe(1);
    expect(result.successRate).toBe(0.75);
  });

  it('cancels everything and rejects when aborted', async () => {
    const { store } = withFakeWorker(inner, () => 'hang');
    const controller = new AbortController();
    const pending = evaluateTasks({
      store,
      tasks: [1, 2],
      resourcesId: null,
      mode: 'val',
      timeoutS: null,
      timeoutPolicy: 'zero',
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50).unref();
    await expect(pending).rejects.toThrow(/aborted/);
    const all = await inner.queryRollouts();
    expect(all.items.map((r) => r.status)).toEqual(['cancelled', 'cancelled']);
  });
});

describe('evaluate built-in through startAlgorithms', () => {
  let dir: string;
  let inner: MemoryStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-eval-'));
    inner = new MemoryStore();
  });
  afterEach(async () => {
    await inner.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reports mean reward, success rate and per-task results in a JSON file', async () => {
    await writeFile(join(dir, 'val.jsonl'), '{"x":1}\n{"x":0}\n\n{"x":1}\n{"x":1}\n');
    const latest = await inner.addResources({
      p: { resource_type: 'prompt_template', template: 'a', engine: 'f-string' },
    });
    const { store } = withFakeWorker(inner, (task) => (task as { x: number }).x);
    const handle = startAlgorithms([{ use: 'evaluate', options: {}, data: { val: 'val.jsonl' } }], {
      store,
      gateway: createStoreOnlyGatewayControl({ gatewayUrl: null }),
      logger: silentLogger,
      baseDir: dir,
      progressOutput: sink,
    });
    const [outcome] = await handle.done;
    await handle.close();
    expect(outcome?.status).toBe('succeeded');
    const report = JSON.parse(await readFile(outcome?.reportPath ?? '', 'utf8'));
    expect(report).toMatchObject({
      algorithm: 'evaluate',
      status: 'succeeded',
      result: { resources_id: latest.resources_id, tasks: 4, mean_reward: 0.75, success_rate: 1, timed_out: 0 },
    });
    expect(report.result.results.map((r: { reward: number }) => r.reward)).toEqual([1, 0, 1, 1]);
  });
});
