import { describe, expect, it } from 'vitest';
import { AlgorithmConfigError } from '../../../src/algorithms/errors.js';
import { createAlgorithmFromConfig, validateAlgorithmConfigs } from '../../../src/algorithms/loader.js';
import { rlOptionsSchema } from '../../../src/algorithms/rl/options.js';
import type { ProgressReporter } from '../../../src/algorithms/types.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { tempFilePath } from '../../helpers/temp-path.js';

const quiet: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

describe('rl plugin', () => {
  it('loads as a built-in and names a bad option key', async () => {
    await expect(validateAlgorithmConfigs([{ use: 'rl', options: { model: 'm' }, data: {} }])).resolves.toBeUndefined();
    await expect(
      validateAlgorithmConfigs([{ use: 'rl', options: { model: 'm', groupSize: 0 }, data: {} }]),
    ).rejects.toThrow(/options\.groupSize/);
    await expect(validateAlgorithmConfigs([{ use: 'rl', options: {}, data: {} }])).rejects.toThrow(/options\.model/);
    await expect(
      validateAlgorithmConfigs([
        { use: 'rl', options: { model: 'm', weightLoad: { type: 'command', command: [] } }, data: {} },
      ]),
    ).rejects.toBeInstanceOf(AlgorithmConfigError);
  });

  it('defaults: on-policy GRPO groups of 8, vLLM LoRA loading', () => {
    const options = rlOptionsSchema.parse({ model: 'm' });
    expect(options).toMatchObject({ groupSize: 8, advantage: 'grpo', maxStaleness: 0, maxQueuedBatches: 1 });
    expect(options.weightLoad).toMatchObject({ type: 'http', path: '/load_lora_adapter' });
  });

  it('refuses to run without a trainer hub or without training tasks', async () => {
    const store = new MemoryStore();
    const algorithm = await createAlgorithmFromConfig(
      { use: 'rl', options: { model: 'm' }, data: {} },
      { index: 0, baseDir: process.cwd() },
    );
    const ctx = {
      store,
      gateway: { attemptBaseUrl: () => null },
      datasets: { train: [{ task: 1 }], val: null },
      logger: silentLogger,
      progress: quiet,
      signal: new AbortController().signal,
      reportPath: tempFilePath('report.json'),
    };
    await expect(algorithm.run(ctx)).rejects.toThrow(/trainer hub/);
    const { TrainerHub } = await import('../../../src/algorithms/rl/trainer-hub.js');
    await expect(
      algorithm.run({
        ...ctx,
        gateway: { ...ctx.gateway, trainerHub: new TrainerHub() },
        datasets: { train: [], val: null },
      }),
    ).rejects.toThrow(/data\.train/);
    await store.close();
  });

  it('on shutdown cancels the rollouts of the step in progress', async () => {
    const store = new MemoryStore();
    const { TrainerHub } = await import('../../../src/algorithms/rl/trainer-hub.js');
    let enqueued: (ids: string[]) => void = () => {};
    const enqueuedIds = new Promise<string[]>((resolve) => {
      enqueued = resolve;
    });
    const watched = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'enqueueManyRollouts') {
          return async (...args: Parameters<MemoryStore['enqueueManyRollouts']>) => {
            const rollouts = await target.enqueueManyRollouts(...args);
            enqueued(rollouts.map((r) => r.rollout_id));
            return rollouts;
          };
        }
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const algorithm = await createAlgorithmFromConfig(
      { use: 'rl', options: { model: 'm', groupSize: 2, tasksPerStep: 2 }, data: {} },
      { index: 0, baseDir: process.cwd() },
    );
    const controller = new AbortController();
    const run = algorithm.run({
      store: watched,
      gateway: { attemptBaseUrl: () => null, trainerHub: new TrainerHub() },
      datasets: { train: [{ task: 1 }, { task: 2 }], val: null },
      logger: silentLogger,
      progress: quiet,
      signal: controller.signal,
      reportPath: tempFilePath('report.json'),
    });
    const ids = await enqueuedIds;
    expect(ids).toHaveLength(4);
    controller.abort();
    await expect(run).rejects.toThrow(/abort/i);
    const ended = await Promise.all(ids.map((id) => store.getRolloutById(id)));
    expect(ended.map((r) => r?.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    // Stopped, not timed out: the reason says so.
    expect(ended.map((r) => r?.failure_reason)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    await store.close();
  });
});
