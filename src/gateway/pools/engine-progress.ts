// Reads an engine's progress off its Prometheus `/metrics` text. vLLM's `/health` answers as long as the process
// lives, so an engine loop that hangs (a deadlock, a stuck collective) still passes it; the scheduler statistics on
// /metrics, though, are published by the loop itself, so they stop moving.
// Families read (summed over every label set: engine index, ranks, finished reason, mode):
// - requests in the engine: vLLM `vllm:num_requests_running` + `vllm:num_requests_waiting` (gauges), SGLang
//   `sglang:num_running_reqs` + `sglang:num_queue_reqs`;
// - work done: vLLM `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`, `vllm:request_success_total`
//   (counters), SGLang `sglang:prompt_tokens_total`, `sglang:generation_tokens_total`, `sglang:realtime_tokens_total`.
// Prompt tokens count as work so a prefill shows progress once it completes (vLLM counts a prompt with its first
// token, not chunk by chunk).

const BUSY_FAMILIES: ReadonlySet<string> = new Set([
  'vllm:num_requests_running',
  'vllm:num_requests_waiting',
  'sglang:num_running_reqs',
  'sglang:num_queue_reqs',
]);

const WORK_FAMILIES: ReadonlySet<string> = new Set([
  'vllm:prompt_tokens_total',
  'vllm:generation_tokens_total',
  'vllm:request_success_total',
  'sglang:prompt_tokens_total',
  'sglang:generation_tokens_total',
  'sglang:realtime_tokens_total',
]);

export interface EngineProgress {
  /** Requests the engine reports running or queued. */
  readonly busy: number;
  /** The sum of its work counters: any change (a restart resets them too) means the loop ran. */
  readonly work: number;
  /** Gauges and counters together: two equal signatures mean the loop published nothing new in between. */
  readonly signature: string;
}

/** A sample line's metric name and value; null for comments, blank lines and lines that are not samples. */
function sample(line: string): { name: string; value: number } | null {
  if (line.length === 0 || line.startsWith('#')) return null;
  const brace = line.indexOf('{');
  const space = line.indexOf(' ');
  if (space < 0) return null;
  const nameEnd = brace >= 0 && brace < space ? brace : space;
  const name = line.slice(0, nameEnd);
  // Label values may hold spaces: the value follows the closing brace.
  const rest = brace >= 0 && brace < space ? line.slice(line.lastIndexOf('}') + 1) : line.slice(space);
  const value = Number(rest.trim().split(/\s+/)[0]);
  return Number.isFinite(value) ? { name, value } : null;
}

/** The engine's progress, or null when the text holds none of the families above (not an engine we know). */
export function readEngineProgress(text: string): EngineProgress | null {
  let busy = 0;
  let work = 0;
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    const s = sample(line.trim());
    if (s === null) continue;
    if (BUSY_FAMILIES.has(s.name)) busy += s.value;
    else if (WORK_FAMILIES.has(s.name)) work += s.value;
    else continue;
    sums.set(s.name, (sums.get(s.name) ?? 0) + s.value);
  }
  if (sums.size === 0) return null;
  const signature = [...sums].map(([name, value]) => `${name}=${value}`).join(' ');
  return { busy, work, signature };
}
