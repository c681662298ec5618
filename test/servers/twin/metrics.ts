// GET /metrics in the engine's Prometheus text format (prometheus_client's exposition: a counter named `x` is
// exposed as `x_total`). Only the families that show whether the engine loop makes progress are emulated:
// - vLLM (vllm/v1/metrics/loggers.py, labels model_name and engine): the gauges vllm:num_requests_running and
//   vllm:num_requests_waiting, the counters vllm:prompt_tokens_total (a request's prompt counts once its prefill
//   is done, i.e. with its first token), vllm:generation_tokens_total and vllm:request_success_total;
// - SGLang (python/sglang/srt/metrics/collector.py, --enable-metrics): the gauges sglang:num_running_reqs and
//   sglang:num_queue_reqs, the counters sglang:prompt_tokens_total, sglang:generation_tokens_total and
//   sglang:realtime_tokens_total{mode}.
// All of them are published by the engine loop, so a hung loop (Engine.setHung) freezes them.
import type { EngineMetrics } from './engine.js';
import type { TwinDialect } from './types.js';

interface Family {
  readonly name: string;
  readonly type: 'gauge' | 'counter';
  readonly help: string;
  readonly samples: ReadonlyArray<{ readonly labels: string; readonly value: number }>;
}

function render(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    // prometheus_client prints floats (`3.0`).
    for (const s of f.samples)
      lines.push(`${f.name}{${s.labels}} ${Number.isInteger(s.value) ? `${s.value}.0` : s.value}`);
  }
  return `${lines.join('\n')}\n`;
}

function vllmFamilies(model: string, m: EngineMetrics): Family[] {
  const labels = `engine="0",model_name="${model}"`;
  const one = (value: number) => [{ labels, value }];
  return [
    {
      name: 'vllm:num_requests_running',
      type: 'gauge',
      help: 'Number of requests in model execution batches.',
      samples: one(m.running),
    },
    {
      name: 'vllm:num_requests_waiting',
      type: 'gauge',
      help: 'Number of requests waiting to be processed.',
      samples: one(m.waiting),
    },
    {
      name: 'vllm:prompt_tokens_total',
      type: 'counter',
      help: 'Number of prefill tokens processed.',
      samples: one(m.promptTokens),
    },
    {
      name: 'vllm:generation_tokens_total',
      type: 'counter',
      help: 'Number of generation tokens processed.',
      samples: one(m.generationTokens),
    },
    {
      name: 'vllm:request_success_total',
      type: 'counter',
      help: 'Count of successfully processed requests.',
      samples: [{ labels: `${labels},finished_reason="stop"`, value: m.finishedRequests }],
    },
  ];
}

function sglangFamilies(model: string, m: EngineMetrics): Family[] {
  const labels = `engine_type="unified",model_name="${model}",pp_rank="0",tp_rank="0"`;
  const one = (value: number) => [{ labels, value }];
  return [
    {
      name: 'sglang:num_running_reqs',
      type: 'gauge',
      help: 'The number of running requests.',
      samples: one(m.running),
    },
    {
      name: 'sglang:num_queue_reqs',
      type: 'gauge',
      help: 'The number of requests in the waiting queue.',
      samples: one(m.waiting),
    },
    {
      name: 'sglang:prompt_tokens_total',
      type: 'counter',
      help: 'Number of prefill tokens processed.',
      samples: one(m.promptTokens),
    },
    {
      name: 'sglang:generation_tokens_total',
      type: 'counter',
      help: 'Number of generation tokens processed.',
      samples: one(m.generationTokens),
    },
    {
      name: 'sglang:realtime_tokens_total',
      type: 'counter',
      help: 'Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, decode.',
      samples: [
        { labels: `${labels},mode="prefill_compute"`, value: m.promptTokens },
        { labels: `${labels},mode="prefill_cache"`, value: 0 },
        { labels: `${labels},mode="decode"`, value: m.generationTokens },
      ],
    },
  ];
}

export function renderMetrics(options: { dialect: TwinDialect; model: string; metrics: EngineMetrics }): string {
  const { dialect, model, metrics } = options;
  return render(dialect === 'sglang' ? sglangFamilies(model, metrics) : vllmFamilies(model, metrics));
}
