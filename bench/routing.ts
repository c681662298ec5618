// `npm run bench:routing`: pool routing policies on the engine twin's prefix cache (docs/routing.md). One pool of 8
// twins behind a real gateway on a socket; CONCURRENCY openai-SDK agents each run multi-turn rollouts one after
// another, of skewed lengths (most rollouts short, a few long; answers mostly short, some long), every turn
// resending the whole conversation. The same seeded workload runs once per policy, each on fresh twins (cold
// caches). Reports the prefix-cache hit rate (sum of usage.prompt_tokens_details.cached_tokens over sum of
// prompt_tokens), max - min in-flight calls across the backends sampled every SAMPLE_MS from /admin/pools (p50,
// p95, max), and the routing decisions from /metrics.
//
// Everything runs in this process (gateway, twins, agents), so the timings are loopback-and-few-cores numbers; the
// comparison between the policies is what this measures.
// Env: BENCH_SECONDS (per policy, default 8), BENCH_CONCURRENCY (32), BENCH_MAX_IMBALANCE (4).
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import type { RoutingPolicy } from '../config/routing-schema.js';
import { configSchema } from '../config/schema.js';
import { createRng } from '../src/algorithms/rng.js';
import { createGateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import { type MockVllm, startMockVllm } from '../test/servers/mock-vllm.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const MAX_IMBALANCE = Number(process.env.BENCH_MAX_IMBALANCE ?? 4);
const BACKENDS = 8;
const SAMPLE_MS = 25;
const MODEL = 'mock-model';
// Non-stream answers paced like generations, so a long answer holds its backend longer.
const MOCK = {
  model: MODEL,
  enablePromptTokensDetails: true,
  paceNonStream: true,
  ttftMs: 5,
  interTokenMs: 1,
  respond: () => 'thinking about the next tool call. '.repeat(20),
};
const POLICIES: readonly RoutingPolicy[] = ['sticky-least-loaded', 'hash', 'round-robin'];

interface PolicyResult {
  readonly policy: RoutingPolicy;
  readonly rollouts: number;
  readonly calls: number;
  readonly errors: number;
  readonly hitRate: number;
  readonly imbalanceP50: number;
  readonly imbalanceP95: number;
  readonly imbalanceMax: number;
  readonly decisions: Readonly<Record<string, number>>;
}

/** Skewed: 80 % of rollouts take 2-5 turns, 20 % take 10-25. */
function turnsOf(random: () => number): number {
  return random() < 0.8 ? 2 + Math.floor(random() * 4) : 10 + Math.floor(random() * 16);
}

/** Skewed answers: mostly 8-40 tokens, one in eight 150-400. */
function answerTokensOf(random: () => number): number {
  return random() < 0.875 ? 8 + Math.floor(random() * 33) : 150 + Math.floor(random() * 251);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function imbalance(url: string): Promise<number | null> {
  const body = (await (await fetch(`${url}/admin/pools`)).json()) as {
    pools: Array<{ backends: Array<{ inflight: number }> }>;
  };
  const loads = body.pools[0]?.backends.map((b) => b.inflight) ?? [];
  return loads.length === 0 ? null : Math.max(...loads) - Math.min(...loads);
}

async function decisions(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^rollgate_routing_decisions_total\{[^}]*decision="(\w+)"[^}]*\} (\d+)/gm)) {
    counts[match[1] ?? ''] = Number(match[2]);
  }
  return counts;
}

async function run(policy: RoutingPolicy): Promise<PolicyResult> {
  const mocks: MockVllm[] = [];
  for (let i = 0; i < BACKENDS; i += 1) mocks.push(await startMockVllm(MOCK));
  const config = configSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    store: { kind: 'memory' },
    logging: { level: 'silent' },
    models: [
      {
        name: MODEL,
        backends: mocks.map((m) => ({ url: m.url })),
        health: { intervalMs: 0 },
        routing: { policy, maxImbalance: MAX_IMBALANCE },
      },
    ],
  });
  const gateway = await createGateway(config, { logger: silentLogger });
  const { url } = await gateway.listen();
  let prompt = 0;
  let cached = 0;
  let calls = 0;
  let errors = 0;
  let rollouts = 0;
  const samples: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const value = await imbalance(url).catch(() => null);
      if (value !== null) samples.push(value);
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();
  const deadline = performance.now() + SECONDS * 1000;
  const worker = async (id: number) => {
    // Seeded per worker: every policy sees the same rollouts, turn counts and answer lengths.
    const random = createRng(1_000 + id).next;
    for (let n = 0; performance.now() < deadline; n += 1) {
      const rid = `bench-w${id}-r${n}`;
      const client = new OpenAI({ baseURL: `${url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'bench', maxRetries: 0 });
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
        { role: 'system', content: `You are agent ${id}. Use the tools to finish rollout ${rid}.` },
        {
          role: 'user',
          content: `Task ${rid}: ${'describe the repository layout and fix the failing test. '.repeat(3)}`,
        },
      ];
      const turns = turnsOf(random);
      rollouts += 1;
      for (let k = 0; k < turns; k += 1) {
        const maxTokens = answerTokensOf(random);
        try {
          const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: maxTokens });
          calls += 1;
          prompt += answer.usage?.prompt_tokens ?? 0;
          cached += answer.usage?.prompt_tokens_details?.cached_tokens ?? 0;
          messages.push({ role: 'assistant', content: answer.choices[0]?.message.content ?? '' });
          messages.push({ role: 'user', content: `tool output ${k}: ${'ok '.repeat(1 + Math.floor(random() * 20))}` });
        } catch {
          errors += 1;
          break;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => worker(i)));
  sampling = false;
  await sampler;
  const counted = await decisions(url);
  await gateway.close();
  await Promise.all(mocks.map((m) => m.close()));
  samples.sort((a, b) => a - b);
  return {
    policy,
    rollouts,
    calls,
    errors,
    hitRate: prompt === 0 ? 0 : cached / prompt,
    imbalanceP50: percentile(samples, 50),
    imbalanceP95: percentile(samples, 95),
    imbalanceMax: samples[samples.length - 1] ?? Number.NaN,
    decisions: counted,
  };
}

function table(results: readonly PolicyResult[]): string {
  const rows = [
    '| policy | rollouts | calls | errors | prefix-cache hit rate | in-flight max-min p50 / p95 / max | decisions (sticky / moved / new) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const d = r.decisions;
    rows.push(
      `| ${r.policy} | ${r.rollouts} | ${r.calls} | ${r.errors} | ${(r.hitRate * 100).toFixed(1)} % | ` +
        `${r.imbalanceP50} / ${r.imbalanceP95} / ${r.imbalanceMax} | ${d.sticky ?? 0} / ${d.moved ?? 0} / ${d.new ?? 0} |`,
    );
  }
  return rows.join('\n');
}

async function main(): Promise<void> {
  const results: PolicyResult[] = [];
  for (const policy of POLICIES) results.push(await run(policy));
  process.stdout.write(
    `${BACKENDS} twin backends, ${CONCURRENCY} concurrent agents, ${SECONDS} s per policy, maxImbalance ${MAX_IMBALANCE}\n\n`,
  );
  process.stdout.write(`${table(results)}\n`);
  const sticky = results.find((r) => r.policy === 'sticky-least-loaded');
  if (sticky !== undefined) {
    const ok = sticky.hitRate >= 0.8 && sticky.imbalanceP95 <= MAX_IMBALANCE;
    process.stdout.write(
      `\nsticky-least-loaded: hit rate >= 80 % and p95 imbalance <= ${MAX_IMBALANCE}: ${ok ? 'met' : 'NOT met'}\n`,
    );
  }
}

await main();
