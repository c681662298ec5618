// The version label a backend reports after a load (src/algorithms/rl/engine-control.ts), asked over real sockets
// of the engine twin: vLLM's /weight_info, SGLang's /model_info (SGLang has no /weight_info). Both engines' unlabelled
// weights read `default` (measured on real vLLM 0.32: a LoRA load leaves it so).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelNames, reportedWeightVersion } from '../../../src/algorithms/rl/engine-control.js';
import { twinPost } from '../../helpers/swap-rig.js';
import { type MockVllm, startEngineTwin } from '../../servers/mock-vllm.js';

const control = { fetch, headers: {}, timeoutMs: 5_000 };

describe('reported weight version', () => {
  let sglang: MockVllm;
  let vllm: MockVllm;
  beforeAll(async () => {
    sglang = await startEngineTwin({ model: 'base', dialect: 'sglang' });
    vllm = await startEngineTwin({ model: 'base' });
  });
  afterAll(async () => {
    await sglang?.close();
    await vllm?.close();
  });

  it('SGLang: none until a load or /update_weight_version labels the weights, then that label', async () => {
    expect(await reportedWeightVersion(sglang.url, { ...control, kind: 'sglang' })).toBeNull();
    await twinPost(sglang, '/update_weight_version', { new_version: 'v5' });
    expect(await reportedWeightVersion(sglang.url, { ...control, kind: 'sglang' })).toBe('v5');
    // The vLLM route does not exist there: asked the vLLM way, the backend cannot tell.
    expect(await reportedWeightVersion(sglang.url, { ...control, kind: 'vllm' })).toBeUndefined();
  });

  it('vLLM: none while /weight_info reads `default`, then the label /update_weight_version set', async () => {
    const raw = (await (await fetch(`${vllm.baseUrl}/weight_info`)).json()) as unknown;
    expect(raw).toEqual({ weight_version: 'default' });
    expect(await reportedWeightVersion(vllm.url, { ...control, kind: 'vllm' })).toBeNull();
    await twinPost(vllm, '/v1/load_lora_adapter', { lora_name: 'policy', lora_path: '/ckpt/1' });
    expect(await reportedWeightVersion(vllm.url, { ...control, kind: 'vllm' })).toBeNull();
    await twinPost(vllm, '/update_weight_version', { new_version: '7' });
    expect(await reportedWeightVersion(vllm.url, { ...control, kind: 'vllm' })).toBe('7');
  });

  it('a label names a version as the number, or with a v before it', () => {
    expect(labelNames('7', 7)).toBe(true);
    expect(labelNames('v7', 7)).toBe(true);
    expect(labelNames('v70', 7)).toBe(false);
    expect(labelNames('default', 7)).toBe(false);
  });
});
