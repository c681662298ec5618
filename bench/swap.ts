// Weight-swap benchmark
// (`npm run bench:swap -- [--agents 32] [--swaps 5] [--tokens 120] [--inter-token-ms 5] [--load-ms 200]`):
// `drain`, `keep` and `abort-resubmit` (chat and completions agents) on a vLLM-dialect twin, and `keep` on an
// SGLang-dialect twin, under streaming openai-SDK agents mid-generation, over real sockets (docs/weight-swaps.md).
// Per swap it reports
//   pause window:   how long the gateway held new calls (the swap report's pause_ms);
//   in-flight-zero: how long the backend had no generation in flight at all between the swap's start and the
//                   first generation after it (from the twin's ledger: the GPU idles, nothing to decode);
//   empty slots:    the integral of (agents - generations in flight) over the same window, in slot-seconds: the
//                   decode capacity lost while the last generations finish and while the weights load;
//   aborted:        generations the swap aborted, and the tokens they had decoded (decoded again after the swap,
//                   or, for a continued completions stream, prefilled again as part of its new prompt);
//   agent errors:   agent calls that failed (an aborted chat stream ends with a retryable error; the agent calls
//                   again; an aborted completions stream is continued).
// The load is made to take --load-ms (the twin delays its answer), in every mode alike.
import { performance } from 'node:perf_hooks';
import { SwapRig } from '../test/helpers/swap-rig.js';
import type { LedgerEntry } from '../test/servers/mock-vllm.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const AGENTS = arg('agents', 32);
const SWAPS = arg('swaps', 5);
const TOKENS = arg('tokens', 120);
const INTER_TOKEN_MS = arg('inter-token-ms', 5);
const LOAD_MS = arg('load-ms', 200);

interface SwapSample {
  readonly pauseMs: number;
  readonly drainMs: number;
  readonly idleMs: number;
  readonly emptySlotS: number;
  readonly spanned: number;
  readonly aborted: number;
  readonly abortedTokens: number;
}

interface ModeRun {
  readonly label: string;
  readonly mode: 'drain' | 'keep' | 'abort-resubmit';
  readonly engine: 'vllm' | 'sglang';
  /** The agents' API (default chat): an aborted completions stream is continued, a chat one fails retryably. */
  readonly api?: 'chat' | 'completions';
}

const RUNS: readonly ModeRun[] = [
  { label: 'drain', mode: 'drain', engine: 'vllm' },
  { label: 'keep', mode: 'keep', engine: 'vllm' },
  { label: 'abort-resubmit', mode: 'abort-resubmit', engine: 'vllm' },
  { label: 'abort-resubmit, completions', mode: 'abort-resubmit', engine: 'vllm', api: 'completions' },
  { label: 'keep (SGLang)', mode: 'keep', engine: 'sglang' },
];

/**
 * Over [from, first generation started after `until`): the time with no generation in flight, and the empty
 * decode slots (agents - in flight) integrated over time.
 */
function idleTimes(
  entries: readonly LedgerEntry[],
  window: { readonly from: number; readonly until: number },
): { idleMs: number; emptySlotS: number } {
  const starts = entries.filter((e) => e.startedAt >= window.until).map((e) => e.startedAt);
  const to = starts.length > 0 ? Math.min(...starts) : window.until;
  const edges: Array<[number, number]> = [];
  for (const e of entries) {
    const end = e.finishedAt ?? Number.POSITIVE_INFINITY;
    if (end <= window.from || e.startedAt >= to) continue;
    edges.push([Math.max(e.startedAt, window.from), 1], [Math.min(end, to), -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let running = 0;
  let idleMs = 0;
  let emptySlotMs = 0;
  let last = window.from;
  const account = (t: number): void => {
    const dt = Math.max(0, t - last);
    if (running === 0) idleMs += dt;
    emptySlotMs += Math.max(0, AGENTS - running) * dt;
    last = t;
  };
  for (const [t, delta] of edges) {
    account(t);
    running += delta;
  }
  account(to);
  return { idleMs, emptySlotS: emptySlotMs / 1000 };
}

async function runMode(run: ModeRun): Promise<{ samples: SwapSample[]; agentErrors: number }> {
  const rig = await SwapRig.start({
    mode: run.mode,
    engine: run.engine,
    answerTokens: TOKENS,
    twin: { interTokenMs: INTER_TOKEN_MS, ttftMs: 2 },
  });
  const samples: SwapSample[] = [];
  let agentErrors = 0;
  try {
    const loadPath = run.engine === 'sglang' ? '/update_weights_from_disk' : '/v1/load_lora_adapter';
    rig.twin.setFault(`slow-first-byte=${LOAD_MS}`, { paths: [loadPath] });
    const agents = rig.runAgents(AGENTS, run.api === undefined ? {} : { api: run.api });
    await agents.waitForCalls(AGENTS);
    for (let v = 2; v < 2 + SWAPS; v++) {
      await rig.waitForMidGeneration(Math.ceil(AGENTS / 2), Math.ceil(TOKENS / 4));
      const from = Date.now();
      const started = performance.now();
      const answer = await rig.post('/v1/rl/weights', { version: v, lora_path: `/ckpt/${v}` });
      if (answer.status !== 200) throw new Error(`swap to ${v} failed: ${JSON.stringify(answer.body)}`);
      const swap = answer.body.swap as { pause_ms: number; drain_ms: number };
      const until = from + (performance.now() - started);
      await agents.waitForCalls(AGENTS);
      const entries = rig.twin.ledger.entries.filter((e) => e.endpoint === (run.api ?? 'chat'));
      const spanned = entries.filter(
        (e) => e.startedAt < from && (e.finishedAt ?? 0) > until && new Set(e.weights.map((w) => w.key)).size > 1,
      ).length;
      const aborted = entries.filter(
        (e) => e.finishReason === 'abort' && (e.finishedAt ?? 0) >= from && (e.finishedAt ?? 0) <= until,
      );
      samples.push({
        pauseMs: swap.pause_ms,
        drainMs: swap.drain_ms,
        ...idleTimes(entries, { from, until }),
        spanned,
        aborted: aborted.length,
        abortedTokens: aborted.reduce((n, e) => n + e.tokenIds.length, 0),
      });
    }
    await agents.stop();
    agentErrors = agents.failures.length;
    // Only an aborted stream may fail, and only in abort-resubmit mode (retryably); anything else is a bug.
    if (agentErrors > 0 && run.mode !== 'abort-resubmit') throw new Error(`${agentErrors} agent calls failed`);
  } finally {
    await rig.close();
  }
  return { samples, agentErrors };
}

const fmt = (values: readonly number[]): string => {
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  return `${mean.toFixed(1)} (max ${Math.max(...values).toFixed(1)})`;
};

const results: Array<{ run: ModeRun; samples: SwapSample[]; agentErrors: number }> = [];
for (const run of RUNS) results.push({ run, ...(await runMode(run)) });

process.stdout.write(
  `weight swaps: ${AGENTS} streaming agents, answers of ${TOKENS} tokens at ${INTER_TOKEN_MS} ms/token, ` +
    `a ${LOAD_MS} ms load, ${SWAPS} swaps per mode (mean, max)\n`,
);
process.stdout.write(
  'mode                         pause window ms     drain ms            in-flight-zero ms   empty slots (slot-s)  ' +
    'spanning a swap     aborted             aborted tokens      agent errors\n',
);
for (const { run, samples, agentErrors } of results) {
  process.stdout.write(
    `${run.label.padEnd(28)} ${fmt(samples.map((s) => s.pauseMs)).padEnd(19)} ` +
      `${fmt(samples.map((s) => s.drainMs)).padEnd(19)} ${fmt(samples.map((s) => s.idleMs)).padEnd(19)} ` +
      `${fmt(samples.map((s) => s.emptySlotS)).padEnd(21)} ${fmt(samples.map((s) => s.spanned)).padEnd(19)} ` +
      `${fmt(samples.map((s) => s.aborted)).padEnd(19)} ${fmt(samples.map((s) => s.abortedTokens)).padEnd(19)} ` +
      `${agentErrors}\n`,
  );
}
