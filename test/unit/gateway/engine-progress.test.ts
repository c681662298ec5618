import { describe, expect, it } from 'vitest';
import { BackendHealth } from '../../../src/gateway/pools/backend-health.js';
import { type EngineProgress, readEngineProgress } from '../../../src/gateway/pools/engine-progress.js';
import { ProgressWatch } from '../../../src/gateway/pools/progress-watch.js';
import { renderMetrics } from '../../servers/twin/metrics.js';

// The shape prometheus_client writes for vLLM: HELP/TYPE lines, `_created` samples, two engines, label values
// with spaces, histograms the reader must ignore.
const VLLM_TEXT = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3 8B"} 2.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3 8B"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3 8B"} 4.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3 8B"} 1500.0
vllm:generation_tokens_total{engine="1",model_name="Qwen/Qwen3 8B"} 500.0
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="Qwen/Qwen3 8B"} 1.7e+09
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3 8B"} 1e3
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="Qwen/Qwen3 8B"} 7.0
`;

function progress(text: string): EngineProgress {
  const read = readEngineProgress(text);
  if (read === null) throw new Error('no engine progress read');
  return read;
}

describe('readEngineProgress', () => {
  it("sums vLLM's request gauges and work counters over every label set, and ignores other families", () => {
    const read = progress(VLLM_TEXT);
    expect(read.busy).toBe(7);
    expect(read.work).toBe(3000);
  });

  it("reads SGLang's families as the twin renders them", () => {
    const metrics = { running: 1, waiting: 2, promptTokens: 10, generationTokens: 5, finishedRequests: 0 };
    const read = progress(renderMetrics({ dialect: 'sglang', model: 'm', metrics }));
    expect(read.busy).toBe(3);
    // prompt + generation counters, plus realtime_tokens_total's prefill_compute and decode modes.
    expect(read.work).toBe(30);
  });

  it('changes its signature when a gauge moves between families even if the sums stay equal', () => {
    const a = progress('vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n');
    const b = progress('vllm:num_requests_running 0\nvllm:num_requests_waiting 1\n');
    expect(a.busy).toBe(b.busy);
    expect(a.signature).not.toBe(b.signature);
  });

  it('returns null for metrics that are not an engine it knows', () => {
    expect(readEngineProgress('# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n')).toBeNull();
    expect(readEngineProgress('')).toBeNull();
  });
});

describe('ProgressWatch', () => {
  const busy = progress('vllm:num_requests_running 3\nvllm:generation_tokens_total 100\n');
  const moved = progress('vllm:num_requests_running 3\nvllm:generation_tokens_total 101\n');
  const idle = progress('vllm:num_requests_running 0\nvllm:generation_tokens_total 100\n');

  it('calls a busy engine stalled once nothing moved for the threshold, and progressing when it moves', () => {
    const watch = new ProgressWatch(1000);
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: false, now: 0 })).toBe('progressing');
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: false, now: 999 })).toBe('progressing');
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: false, now: 1000 })).toBe('stalled');
    expect(watch.stalled('a')).toBe(true);
    expect(watch.observe({ id: 'a', progress: moved, gatewayBusy: false, now: 5000 })).toBe('progressing');
    expect(watch.stalled('a')).toBe(false);
  });

  it('never calls an idle engine stalled, unless the gateway has calls waiting on it', () => {
    const watch = new ProgressWatch(1000);
    for (const now of [0, 2000, 4000]) {
      expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: false, now })).toBe('progressing');
    }
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: true, now: 5000 })).toBe('progressing');
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: true, now: 6000 })).toBe('stalled');
  });

  it('keeps a stalled engine left without work stalled for another threshold, then gives it a fresh start', () => {
    const watch = new ProgressWatch(1000);
    watch.observe({ id: 'a', progress: idle, gatewayBusy: true, now: 0 });
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: true, now: 1000 })).toBe('stalled');
    // Its waiting calls went elsewhere: the hung loop still shows nothing, and nothing tells it runs again.
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: false, now: 1100 })).toBe('stalled');
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: false, now: 2099 })).toBe('stalled');
    expect(watch.observe({ id: 'a', progress: idle, gatewayBusy: false, now: 2100 })).toBe('progressing');
    expect(watch.stalled('a')).toBe(false);
  });

  it('restarts the clock for an engine excused (paused on purpose) and for one forgotten', () => {
    const watch = new ProgressWatch(1000);
    watch.observe({ id: 'a', progress: busy, gatewayBusy: true, now: 0 });
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: true, now: 1500 })).toBe('stalled');
    watch.excuse({ id: 'a', now: 1500 });
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: true, now: 2000 })).toBe('progressing');
    watch.forget('a');
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: true, now: 2900 })).toBe('progressing');
    expect(watch.observe({ id: 'a', progress: busy, gatewayBusy: true, now: 3899 })).toBe('progressing');
  });
});

describe('BackendHealth with a probe that names its failure', () => {
  it('ejects with the reason the probe gave', async () => {
    const ejected: Array<[string, string]> = [];
    const health = new BackendHealth(['a'], {
      intervalMs: 1000,
      ejectAfterFailures: 1,
      recoverAfterMs: 0,
      probe: async () => ({ failed: 'engine_stalled' }),
      onEjected: (id, reason) => ejected.push([id, reason]),
    });
    await health.probeAll();
    expect(health.isHealthy('a')).toBe(false);
    expect(ejected).toEqual([['a', 'engine_stalled']]);
    expect(health.snapshot()[0]?.last_error).toBe('engine_stalled');
  });
});
