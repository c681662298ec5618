// `npm run bench:trajectories`: how many training rows a multi-turn, tool-using agent with reasoning becomes when
// the engine speaks the real Qwen3 chat template. A real gateway (in-process, memory store) sits in front of the
// engine twin in qwen3 mode (real tokenizer and template, qwen3 reasoning parser, hermes tool parser); an agent on
// the official openai SDK holds conversations of 2 user queries x (3 tool calls + 1 answer) = 8 model calls, streamed
// and not, keeping its own turns either as the message it got (reasoning included) or rebuilt without reasoning.
// Rows come from the recorded spans through the adapters' merge (a turn joins its row only when its prompt ids
// start with the row's context token for token); every split is classified by where and why the ids differ.
//
// With the pool option `history: "faithful"` the same conversations run again; the rows are then checked against
// the twin's ledger (every mask-1 token is an id the engine generated, every turn's prompt the one it was served),
// the agent's answers against the as-sent run's, and the cost is reported: extra engine calls and gateway CPU per
// model call.
//
// Env: BENCH_ROLLOUTS (per scenario, default 12), BENCH_CONCURRENCY (default 4), BENCH_HISTORY ("as-sent",
// "faithful" or both, comma-separated; default both), BENCH_TOOL_CALLS (per query, default 3), BENCH_QUERIES (2).
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { configSchema } from '../config/schema.js';
import { sortSpansBySequence } from '../src/adapters/span-order.js';
import { tripletsToTrajectories } from '../src/adapters/trajectories.js';
import { spansToTriplets, type TokenTriplet } from '../src/adapters/triplets.js';
import { createGateway, type Gateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';
import type { Span } from '../src/store/core/types.js';
import { type AgentRun, type HistoryStyle, runToolAgent } from '../test/helpers/tool-agent.js';
import { type LedgerEntry, qwen3Tokenizer } from '../test/servers/mock-vllm.js';

const DEFAULT_ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 12);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const HISTORIES = (process.env.BENCH_HISTORY ?? 'as-sent,faithful').split(',').filter((h) => h !== '');
const TOOL_CALLS = Number(process.env.BENCH_TOOL_CALLS ?? 3);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 2);
const MODEL = 'qwen3';
const HISTORY_STATUS = 'rollgate.history.status';
const tokenizer = qwen3Tokenizer();

interface Scenario {
  readonly stream: boolean;
  readonly style: HistoryStyle;
}

const SCENARIOS: readonly Scenario[] = [
  { stream: false, style: 'message' },
  { stream: true, style: 'message' },
  { stream: false, style: 'rebuild' },
  { stream: true, style: 'rebuild' },
];

function scenarioName(s: Scenario): string {
  return `${s.stream ? 'stream' : 'non-stream'}, ${s.style === 'message' ? 'keeps the message' : 'rebuilds its turn'}`;
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > ids.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

const decode = (ids: readonly number[]) => tokenizer.decode(ids, { skipSpecial: false });

/**
 * Why turn k+1's prompt does not continue prompt k + response k. Read as text first (the template may render the
 * same history differently), then as ids (the same text may be tokenised differently across the old boundary).
 */
function splitReason(previous: TokenTriplet, next: TokenTriplet): string {
  const promptText = decode(previous.prompt.token_ids);
  const responseText = decode(previous.response.token_ids);
  const nextText = decode(next.prompt.token_ids);
  const historyAt = firstDifference([...promptText].map(codeOf), [...nextText].map(codeOf));
  if (historyAt < [...promptText].length) {
    const had = [...promptText].slice(historyAt).join('');
    return had.startsWith('<think>')
      ? 'an earlier turn re-rendered: its <think> block dropped after a new user query'
      : 'an earlier turn re-rendered (other)';
  }
  const rest = [...nextText].slice([...promptText].length).join('');
  const at = firstDifference([...responseText].map(codeOf), [...rest].map(codeOf));
  const had = [...responseText].slice(at).join('');
  const got = [...rest].slice(at).join('');
  if (at >= [...responseText].length)
    return 'same text, other tokens: BPE merge across the old prompt/response boundary';
  if (had.startsWith('<think>') && !got.startsWith('<think>'))
    return 'reasoning dropped from the history (<think> not rendered)';
  const before = [...responseText].slice(0, at).join('');
  if (before.split('<tool_call>').length > before.split('</tool_call>').length) {
    return 'tool-call arguments re-serialised (tojson)';
  }
  if (/^\s/.test(had) || /^\s/.test(got))
    return 'whitespace re-rendered (content "\\n\\n" before a tool call gets another "\\n")';
  return 'other';
}

const codeOf = (c: string) => c.codePointAt(0) ?? 0;

interface ScenarioResult {
  readonly rollouts: number;
  readonly rows: number;
  readonly oneRow: number;
  readonly tokens: number;
  readonly calls: number;
  readonly reasons: Map<string, number>;
  readonly examples: Map<string, string>;
  readonly runs: AgentRun[];
  /** Rows whose ids disagree with what the twin's ledger says it served (faithful check). */
  readonly ledgerMismatches: number;
  readonly historyStatuses: Map<string, number>;
  readonly engineCalls: number;
  readonly cpuMs: number;
  readonly engineCpuMs: number;
}

/** The twin in its own process (bench/trajectories-twin.ts). */
interface TwinProcess {
  readonly url: string;
  readonly baseUrl: string;
  readonly model: string;
  stats(): Promise<{ cpuMs: number; byPath: Record<string, number> }>;
  ledger(): Promise<LedgerEntry[]>;
  close(): Promise<void>;
}

async function startTwinProcess(): Promise<TwinProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./trajectories-twin.ts', import.meta.url).pathname, String(TOOL_CALLS)],
    { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
  );
  const stdout = child.stdout;
  if (stdout === null) throw new Error('no stdout from the twin process');
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: stdout });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the twin process exited with ${code}`)));
  });
  const info = JSON.parse(line) as { url: string; baseUrl: string; model: string };
  return {
    ...info,
    stats: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as { cpuMs: number; byPath: Record<string, number> }));
        child.send('stats');
      }),
    async ledger() {
      const res = await fetch(`${info.baseUrl}/_twin/ledger`);
      return ((await res.json()) as { entries: LedgerEntry[] }).entries;
    },
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('close');
      }),
  };
}

/** Requests the calls made (health probes run on their own clock). */
const callRequests = (byPath: Record<string, number>) =>
  Object.entries(byPath).reduce((sum, [path, n]) => (path === '/health' ? sum : sum + n), 0);

async function spansOf(gateway: Gateway, rid: string): Promise<Span[]> {
  return sortSpansBySequence((await gateway.store.querySpans(rid, { attempt_id: 'latest' })).items);
}

/** Every mask-1 run of a row must be, token for token, one generation in the ledger, with its prompt before it. */
function rowMatchesLedger(
  row: { promptIds: number[]; responseIds: number[]; responseMask: number[] },
  ledger: ReadonlyMap<string, LedgerEntry>,
  triplets: readonly TokenTriplet[],
): boolean {
  const context = [...row.promptIds, ...row.responseIds];
  for (const t of triplets) {
    const entry = ledger.get(t.metadata.response_id ?? '');
    if (entry === undefined) return false;
    const served = [...entry.promptIds, ...entry.tokenIds];
    if (!startsWith(context, served)) return false;
    const start = entry.promptIds.length - row.promptIds.length;
    for (let i = 0; i < entry.tokenIds.length; i++) if (row.responseMask[start + i] !== 1) return false;
  }
  return true;
}

async function runScenario(options: {
  gateway: Gateway;
  url: string;
  twin: TwinProcess;
  scenario: Scenario;
  history: string;
  rollouts?: number;
}): Promise<ScenarioResult> {
  const ROLLOUTS = options.rollouts ?? DEFAULT_ROLLOUTS;
  const { gateway, scenario, twin } = options;
  const reasons = new Map<string, number>();
  const examples = new Map<string, string>();
  const statuses = new Map<string, number>();
  let rows = 0;
  let oneRow = 0;
  let tokens = 0;
  let calls = 0;
  let ledgerMismatches = 0;
  const runs: AgentRun[] = new Array(ROLLOUTS);
  const rids: string[] = [];
  const before = await twin.stats();
  const cpuBefore = process.cpuUsage();
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= ROLLOUTS) return;
      const rid = `bench-${options.history}-${scenario.stream ? 's' : 'n'}-${scenario.style}-${options.rollouts ?? ''}-${i}`;
      rids[i] = rid;
      const client = new OpenAI({
        baseURL: `${options.url}/rollout/${rid}/attempt/a1/v1`,
        apiKey: 'agent',
        maxRetries: 0,
      });
      runs[i] = await runToolAgent({
        client,
        model: MODEL,
        stream: scenario.stream,
        history: scenario.style,
        task: `Topic ${i}: how do the ${['rivers', 'bridges', 'markets', 'libraries'][i % 4]} of city ${i} work?`,
        queries: QUERIES,
      });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const cpu = process.cpuUsage(cpuBefore);
  const after = await twin.stats();
  const engineCalls = callRequests(after.byPath) - callRequests(before.byPath);
  const engineCpuMs = after.cpuMs - before.cpuMs;
  const ledger = new Map((await twin.ledger()).map((e) => [e.responseId, e]));
  for (const rid of rids) {
    const spans = await spansOf(gateway, rid);
    for (const span of spans) {
      const status = span.attributes[HISTORY_STATUS];
      const key = typeof status === 'string' ? status : 'none';
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    const triplets = spansToTriplets(spans);
    calls += triplets.length;
    const split = new Set<number>();
    const rowsOf = tripletsToTrajectories(triplets, 1, {
      maxPromptLength: 1 << 20,
      maxResponseLength: 1 << 20,
      onMergeMismatch: ({ sequenceId }) => split.add(sequenceId),
    });
    for (let k = 1; k < triplets.length; k++) {
      const t = triplets[k];
      const previous = triplets[k - 1];
      if (t === undefined || previous === undefined || !split.has(t.metadata.sequence_id)) continue;
      const reason = splitReason(previous, t);
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      if (!examples.has(reason)) {
        const context = [...previous.prompt.token_ids, ...previous.response.token_ids];
        const at = firstDifference(context, t.prompt.token_ids);
        examples.set(
          reason,
          `had ${JSON.stringify(decode(context.slice(Math.max(0, at - 6), at + 10)))}, got ${JSON.stringify(
            decode(t.prompt.token_ids.slice(Math.max(0, at - 6), at + 10)),
          )}`,
        );
      }
    }
    rows += rowsOf.length;
    if (rowsOf.length === 1) oneRow += 1;
    for (const row of rowsOf) tokens += row.promptIds.length + row.responseIds.length;
    if (rowsOf.length === 1 && rowsOf[0] !== undefined && !rowMatchesLedger(rowsOf[0], ledger, triplets)) {
      ledgerMismatches += 1;
    }
  }
  return {
    rollouts: rids.length,
    rows,
    oneRow,
    tokens,
    calls,
    reasons,
    examples,
    runs,
    ledgerMismatches,
    historyStatuses: statuses,
    engineCalls,
    cpuMs: (cpu.user + cpu.system) / 1000,
    engineCpuMs,
  };
}

/** The agent-visible answers of two runs, tool-call ids aside (the engine makes new ones per call). */
function sameAnswers(a: readonly AgentRun[], b: readonly AgentRun[]): { same: number; total: number } {
  let same = 0;
  let total = 0;
  a.forEach((run, i) => {
    const other = b[i];
    run.turns.forEach((turn, k) => {
      total += 1;
      if (JSON.stringify(turn) === JSON.stringify(other?.turns[k])) same += 1;
    });
  });
  return { same, total };
}

async function startGateway(twin: TwinProcess, history: string): Promise<{ gateway: Gateway; url: string }> {
  const config = configSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    store: { kind: 'memory' },
    logging: { level: 'silent' },
    models: [
      {
        name: MODEL,
        upstreamModel: twin.model,
        backends: [{ url: twin.url }],
        ...(history === 'as-sent' ? {} : { history: { mode: history, family: 'qwen3' } }),
      },
    ],
  });
  const gateway = await createGateway(config, { logger: silentLogger });
  const { url } = await gateway.listen();
  return { gateway, url };
}

const pct = (n: number, d: number) => (d === 0 ? '-' : `${((100 * n) / d).toFixed(0)} %`);

async function main(): Promise<void> {
  const twin = await startTwinProcess();
  const results = new Map<string, Map<Scenario, ScenarioResult>>();
  try {
    for (const history of HISTORIES) {
      const { gateway, url } = await startGateway(twin, history);
      const byScenario = new Map<Scenario, ScenarioResult>();
      try {
        // One unmeasured rollout per scenario first: JIT warm-up, pools and sessions opened.
        for (const scenario of SCENARIOS) await runScenario({ gateway, url, twin, scenario, history, rollouts: 1 });
        for (const scenario of SCENARIOS) {
          byScenario.set(scenario, await runScenario({ gateway, url, twin, scenario, history }));
        }
      } finally {
        await gateway.close();
      }
      results.set(history, byScenario);
    }
  } finally {
    await twin.close();
  }

  console.log(
    `\n## Trajectories (engine twin, qwen3 mode; ${DEFAULT_ROLLOUTS} rollouts per scenario, ${QUERIES} queries x ` +
      `(${TOOL_CALLS} tool calls + 1 answer))\n`,
  );
  console.log(
    '| history | scenario | rollouts | calls | rows / rollout | one row | tokens / row | ledger-exact rows |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const [history, byScenario] of results) {
    for (const [scenario, r] of byScenario) {
      const exact = history === 'as-sent' ? '-' : `${r.oneRow - r.ledgerMismatches} / ${r.oneRow}`;
      console.log(
        `| ${history} | ${scenarioName(scenario)} | ${r.rollouts} | ${r.calls} | ${(r.rows / r.rollouts).toFixed(2)} | ` +
          `${pct(r.oneRow, r.rollouts)} | ${Math.round(r.tokens / Math.max(1, r.rows))} | ${exact} |`,
      );
    }
  }
  console.log('\n### Why rows split\n');
  console.log('| history | scenario | reason | splits | example (context vs next prompt, at the first difference) |');
  console.log('|---|---|---|---:|---|');
  for (const [history, byScenario] of results) {
    for (const [scenario, r] of byScenario) {
      if (r.reasons.size === 0) console.log(`| ${history} | ${scenarioName(scenario)} | (none) | 0 | |`);
      for (const [reason, n] of [...r.reasons].sort((a, b) => b[1] - a[1])) {
        const example = (r.examples.get(reason) ?? '').replaceAll('|', '\\|');
        console.log(`| ${history} | ${scenarioName(scenario)} | ${reason} | ${n} | \`${example}\` |`);
      }
    }
  }
  const asSent = results.get('as-sent');
  for (const [history, byScenario] of results) {
    if (history === 'as-sent') continue;
    console.log(`\n### ${history}: what each call did, the answers, the cost\n`);
    console.log(
      '| scenario | span history status | answers identical to as-sent | engine requests / call | ' +
        'agent + gateway CPU ms / call | engine CPU ms / call |',
    );
    console.log('|---|---|---:|---:|---:|---:|');
    const pair = (mine: number, base: number | undefined) =>
      base === undefined ? mine.toFixed(2) : `${mine.toFixed(2)} (as-sent ${base.toFixed(2)})`;
    for (const [scenario, r] of byScenario) {
      const base = asSent?.get(scenario);
      const answers = base === undefined ? null : sameAnswers(base.runs, r.runs);
      const statuses = [...r.historyStatuses].map(([k, v]) => `${k} ${v}`).join(', ');
      console.log(
        `| ${scenarioName(scenario)} | ${statuses} | ${answers === null ? '-' : `${answers.same} / ${answers.total}`} | ` +
          `${pair(r.engineCalls / r.calls, base && base.engineCalls / base.calls)} | ` +
          `${pair(r.cpuMs / r.calls, base && base.cpuMs / base.calls)} | ` +
          `${pair(r.engineCpuMs / r.calls, base && base.engineCpuMs / base.calls)} |`,
      );
    }
  }
}

await main();
