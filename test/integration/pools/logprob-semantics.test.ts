// What recorded logprobs mean, over real HTTP: vLLM returns RAW logprobs unless started with
// --logprobs-mode processed_logprobs, so each pool declares its mode (default raw), every span carries it, a raw
// call made under adjusted sampling (the agent's temperature 0.7) is marked, and the `rl` plugin refuses to start
// importance-ratio batches from raw logprobs when its own sampling config uses temperature 0.7.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlgorithmConfigError } from '../../../src/algorithms/errors.js';
import { createAdminGatewayControl } from '../../../src/algorithms/rl/admin-gateway-control.js';
import { createAlgorithm } from '../../../src/algorithms/rl/index.js';
import type { AlgorithmContext, ProgressReporter } from '../../../src/algorithms/types.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { silentLogger } from '../../../src/logger.js';
import type { LightningStore } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { tempFilePath } from '../../helpers/temp-path.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

const MODEL = 'mock-model';
const quiet: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

let h: Harness;
let processed: TestGateway;
beforeAll(async () => {
  h = await startHarness();
  processed = await startTestGateway({
    models: [{ name: MODEL, backends: [{ url: h.mock.url }], logprobsMode: 'processed', health: { intervalMs: 0 } }],
  });
});
afterAll(async () => {
  await processed?.close();
  await h?.close();
});

describe('spans', () => {
  it('carry the declared mode and mark raw logprobs taken under the agent’s temperature 0.7', async () => {
    const hot = rolloutId();
    const neutral = rolloutId();
    const messages = [{ role: 'user' as const, content: 'hi' }];
    await h.client(hot).chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 0.7 });
    await h.client(neutral).chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 1 });
    const [hotSpan] = await h.spans(hot);
    const [neutralSpan] = await h.spans(neutral);
    expect(hotSpan?.attributes[A.ATTR_LOGPROBS_MODE]).toBe('raw');
    expect(hotSpan?.attributes[A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS]).toEqual(['temperature']);
    expect(neutralSpan?.attributes[A.ATTR_LOGPROBS_MODE]).toBe('raw');
    expect(neutralSpan?.attributes).not.toHaveProperty(A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS);
  });

  it('mark nothing on a pool that declares processed logprobs', async () => {
    const rid = rolloutId();
    const sdk = h.client(rid);
    const agent = sdk.withOptions({ baseURL: `${processed.url}/rollout/${rid}/attempt/a1/v1` });
    await agent.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
      temperature: 0.7,
    });
    const [span] = (await processed.gateway.store.querySpans(rid)).items;
    expect(span?.attributes[A.ATTR_LOGPROBS_MODE]).toBe('processed');
    expect(span?.attributes).not.toHaveProperty(A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS);
  });
});

describe('rl plugin', () => {
  function context(gw: TestGateway, store: LightningStore, signal: AbortSignal): AlgorithmContext {
    return {
      store,
      gateway: { ...createAdminGatewayControl({ gatewayUrl: gw.url }), trainerHub: gw.gateway.rlHub },
      datasets: { train: [{ task: 1 }], val: null },
      logger: silentLogger,
      progress: quiet,
      signal,
      reportPath: tempFilePath('report.json'),
    };
  }
  const options = { model: MODEL, groupSize: 2, tasksPerStep: 1, samplingParameters: { temperature: 0.7 } };

  it('refuses at start to build batches from raw logprobs sampled at temperature 0.7; processed ones start', async () => {
    const store = h.gw.gateway.store;
    const before = (await store.queryRollouts({})).total;
    const run = createAlgorithm(options).run(context(h.gw, store, new AbortController().signal));
    await expect(run).rejects.toBeInstanceOf(AlgorithmConfigError);
    await expect(run).rejects.toThrow(/raw logprobs.*temperature=0\.7.*--logprobs-mode processed_logprobs/s);
    // Refused before any rollout ran.
    expect((await store.queryRollouts({})).total).toBe(before);

    // The same run against a pool declaring processed logprobs gets as far as enqueueing its first step.
    const processedStore = processed.gateway.store;
    let enqueued: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      enqueued = resolve;
    });
    const watched = new Proxy(processedStore, {
      get(target, key, receiver) {
        if (key === 'enqueueManyRollouts') {
          return async (...args: Parameters<LightningStore['enqueueManyRollouts']>) => {
            const rollouts = await target.enqueueManyRollouts(...args);
            enqueued();
            return rollouts;
          };
        }
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const controller = new AbortController();
    const running = createAlgorithm(options).run(context(processed, watched, controller.signal));
    await started;
    controller.abort();
    await expect(running).rejects.toThrow(/abort/i);
  });
});
