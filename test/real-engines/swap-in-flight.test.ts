// Weight swaps with generations in flight, on real vLLM (docs/weight-swaps.md). Streaming openai-SDK agents are
// mid-generation through rollgate when a trainer posts new weights (`POST /v1/rl/weights`: the rl plugin's default
// hook reloads the LoRA adapter in place). No twin ledger here: what computed each token is established by
// recomputing its logprob with transformers, replaying the KV cache the engine really had (recompute_logprobs.py
// `segments`: the first version's weights up to the switch, the next version's over the old cache after it), so a
// version segment that is off by one token fails. The two adapters differ by tens of nats per token on this model.
// - keep: vLLM `POST /pause?mode=keep` freezes the generations, the adapter reloads, they go on: no agent call fails,
//   the calls that spanned the swap carry per-token segments, and every token's logprob is the one its claimed
//   weights (over the cache they had) give.
// - drain: the swap waits for the generations, then loads: one version per call, each call's logprobs its version's.
// - abort-resubmit: vLLM `POST /pause?mode=abort` ends them; every answer an agent gets is one version's, and the
//   aborted tries stay out of the RL batch.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import type { Span } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { REPO_ROOT } from '../helpers/python.js';
import {
  type AgentRun,
  attachWeightsPlugin,
  runStreamingAgents,
  spanTokenVersions,
  swapBatch,
} from '../helpers/swap-rig.js';
import { realEngineHome } from './vllm-server.js';

const vllm = inject('vllm');
const AGENTS = 4;
/** Long enough that every agent is mid-generation when the swap lands (a few seconds per call on the CPU). */
const ANSWER_TOKENS = 160;
const loraDir = (version: number) =>
  realEngineHome().modelDir(version === 1 ? 'qwen3-tiny-lora-v1' : 'qwen3-tiny-lora-v2');

type Mode = 'keep' | 'drain' | 'abort-resubmit';

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  // vLLM's adapter routes answer plain text ("Success: LoRA adapter ... added successfully.").
  return {
    status: response.status,
    body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text },
  };
}

async function until(condition: () => boolean, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Row {
  readonly span: Span;
  readonly promptIds: number[];
  readonly responseIds: number[];
  readonly logprobs: number[];
  /** The version the span claims for each response token. */
  readonly versions: number[];
}

function rowOf(span: Span): Row {
  const numbers = (key: string): number[] => {
    const value = span.attributes[key];
    return Array.isArray(value) ? (value as number[]) : [];
  };
  return {
    span,
    promptIds: numbers(A.ATTR_PROMPT_TOKEN_IDS),
    responseIds: numbers(A.ATTR_RESPONSE_TOKEN_IDS),
    logprobs: numbers(A.ATTR_RESPONSE_LOGPROBS),
    versions: spanTokenVersions(span),
  };
}

/** Per row, max |recorded - recomputed| over its tokens, each token recomputed with the weights its span claims. */
function worstErrors(rows: readonly Row[]): number[] {
  const out = execFileSync(realEngineHome().python, [join(REPO_ROOT, 'test/real-engines/recompute_logprobs.py')], {
    input: JSON.stringify({
      model_dir: vllm.modelDir,
      rows: rows.map((row) => {
        const segments: Array<{ end: number; lora_dir: string }> = [];
        row.versions.forEach((version, i) => {
          const last = segments.at(-1);
          if (last !== undefined && last.lora_dir === loraDir(version)) last.end = i + 1;
          else segments.push({ end: i + 1, lora_dir: loraDir(version) });
        });
        return { prompt_ids: row.promptIds, response_ids: row.responseIds, temperature: 1, segments };
      }),
    }),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const recomputed = (JSON.parse(out) as { logprobs: number[][] }).logprobs;
  return rows.map((row, i) =>
    Math.max(...row.logprobs.map((lp, k) => Math.abs(lp - (recomputed[i]?.[k] ?? Number.POSITIVE_INFINITY)))),
  );
}

async function spansOf(gw: TestGateway, rolloutIds: readonly string[]): Promise<Span[]> {
  const all: Span[] = [];
  for (const rid of rolloutIds) all.push(...(await gw.gateway.store.querySpans(rid)).items);
  return all;
}

interface Swapped {
  readonly gw: TestGateway;
  readonly agents: AgentRun;
  readonly swap: Record<string, unknown>;
  readonly rows: Row[];
}

/** A gateway whose pool serves adapter v1, agents mid-generation, a swap to v2, then one more call per agent. */
async function swapUnderAgents(mode: Mode): Promise<Swapped> {
  const pool = `policy-${mode}`;
  const loaded = await post(`${vllm.url}/load_lora_adapter`, { lora_name: pool, lora_path: loraDir(1) });
  expect(loaded.status, JSON.stringify(loaded.body)).toBe(200);
  const gw = await startTestGateway({
    models: [
      {
        name: pool,
        upstreamModel: pool,
        version: 1,
        backends: [{ url: vllm.url }],
        logprobs: 'always',
        logprobsMode: 'processed',
        history: { mode: 'as-sent' },
        health: { intervalMs: 0 },
        swap: { mode, verifyVersion: 'auto' },
      },
    ],
    pause: { mode: 'hold' },
  });
  const detach = attachWeightsPlugin(gw, { model: pool });
  const agents = runStreamingAgents(gw.url, AGENTS, {
    model: pool,
    maxTokens: ANSWER_TOKENS,
    maxRetries: 0,
    // vLLM's own sampling key: the tiny random model would otherwise stop at a random EOS.
    extraBody: { temperature: 1, ignore_eos: true },
  });
  try {
    // Every agent's first stream is a few tokens in.
    await until(
      () => agents.streamsPast(8) === AGENTS,
      60_000,
      () => `every agent mid-generation (failures: ${agents.failures.map(String).join('; ')})`,
    );
    const swap = await post(`${gw.url}/v1/rl/weights`, { version: 2, lora_path: loraDir(2) });
    expect(swap.status, JSON.stringify(swap.body)).toBe(200);
    const after = agents.completed();
    await until(() => agents.completed() >= after + AGENTS * 2, 120_000, 'two more calls per agent');
    await agents.stop();
    const rows = (await spansOf(gw, agents.rolloutIds)).map(rowOf);
    return { gw, agents, swap: swap.body.swap as Record<string, unknown>, rows };
  } catch (error) {
    await agents.stop();
    throw error;
  } finally {
    detach();
  }
}

const open: TestGateway[] = [];
afterAll(async () => {
  await Promise.all(open.map((gw) => gw.close()));
  for (const mode of ['keep', 'drain', 'abort-resubmit'])
    await post(`${vllm.url}/unload_lora_adapter`, { lora_name: `policy-${mode}` }).catch(() => undefined);
});

describe('keep mode on real vLLM', () => {
  let result: Swapped;
  beforeAll(async () => {
    result = await swapUnderAgents('keep');
    open.push(result.gw);
  });

  it('freezes the generations, loads, and lets them go on: nothing fails, every token is its claimed weights’', async () => {
    const { agents, swap, rows } = result;
    expect(swap).toMatchObject({ mode: 'keep', version: 2, drain_ms: 0, drained_backends: [] });
    expect(agents.failures).toEqual([]);
    expect(agents.finishReasons.filter((r) => r !== 'length')).toEqual([]);
    expect(rows.length).toBe(agents.completed());
    for (const row of rows) {
      expect(row.span.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
      expect(row.responseIds).toHaveLength(ANSWER_TOKENS);
      expect(row.logprobs).toHaveLength(ANSWER_TOKENS);
    }
    // The calls in flight at the swap carry two versions, token by token; a call that had relayed no token yet is
    // marked changed in flight instead (its prompt may have been computed with the old weights) and not trained on.
    const spanned = rows.filter((row) => new Set(row.versions).size > 1);
    const unsure = rows.filter((row) => row.span.attributes[A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT] === true);
    expect(spanned.length + unsure.length).toBe(AGENTS);
    expect(spanned.length).toBeGreaterThan(0);
    for (const row of spanned) expect(row.versions[0]).toBe(1);

    const sure = rows.filter((row) => !unsure.includes(row));
    const errors = worstErrors(sure);
    const firstV2 = spanned.map((row) => row.versions.indexOf(2));
    console.log(
      `keep swap on real vLLM: pause ${Math.round(swap.pause_ms as number)} ms, sync ${Math.round(swap.sync_ms as number)} ms; ${spanned.length} of ${AGENTS} calls in flight spanned the swap (first v2 token at ${firstV2.join(', ')}), ${unsure.length} changed before a token; max |recorded - replayed| per call: ${errors.map((e) => e.toExponential(1)).join(', ')}`,
    );
    for (const error of errors) expect(error).toBeLessThan(1e-3);

    // The negative control: the spanning calls' v2 tokens are not what v1 alone would have given.
    const asIfV1 = worstErrors(spanned.map((row) => ({ ...row, versions: row.versions.map(() => 1) })));
    for (const error of asIfV1) expect(error).toBeGreaterThan(1e-2);

    // The RL batch trains on every call it can vouch for, with a version per token.
    const batch = await swapBatch(result.gw.gateway.store, agents.rolloutIds, { currentVersion: 2, maxStaleness: 1 });
    expect(batch.samples).toHaveLength(sure.length);
    expect(batch.samples.filter((s) => new Set(s.token_versions).size > 1)).toHaveLength(spanned.length);
    expect(await (await fetch(`${vllm.baseUrl}/is_paused`)).json()).toEqual({ is_paused: false });
  });
});

describe('drain mode on real vLLM', () => {
  let result: Swapped;
  beforeAll(async () => {
    result = await swapUnderAgents('drain');
    open.push(result.gw);
  });

  it('waits for the generations in flight, then loads: one version per call, each its version’s logprobs', async () => {
    const { agents, swap, rows } = result;
    expect(swap).toMatchObject({ mode: 'drain', version: 2, drained_backends: [] });
    expect(swap.drain_ms as number).toBeGreaterThan(0);
    expect(agents.failures).toEqual([]);
    for (const row of rows) {
      expect(new Set(row.versions).size).toBe(1);
      expect(row.span.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);
    }
    const versions = rows.map((row) => row.versions[0]);
    expect(versions.filter((v) => v === 1)).toHaveLength(AGENTS);
    const errors = worstErrors(rows);
    console.log(
      `drain swap on real vLLM: drain ${Math.round(swap.drain_ms as number)} ms, sync ${Math.round(swap.sync_ms as number)} ms; max |recorded - recomputed| per call: ${errors.map((e) => e.toExponential(1)).join(', ')}`,
    );
    for (const error of errors) expect(error).toBeLessThan(1e-3);
  });
});

describe('abort-resubmit mode on real vLLM', () => {
  let result: Swapped;
  beforeAll(async () => {
    result = await swapUnderAgents('abort-resubmit');
    open.push(result.gw);
  });

  it('aborts the generations: every answer the agents keep is one version’s, the aborted tries stay out of training', async () => {
    const { agents, swap, rows } = result;
    expect(swap).toMatchObject({ mode: 'abort-resubmit', version: 2 });
    // Chat streams that had relayed tokens end with the weights_swapped error event (the agent calls again).
    for (const failure of agents.failures) expect(String(failure)).toMatch(/aborted by a weight update/);
    const aborted = rows.filter(
      (row) => row.span.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]?.toString() === 'abort',
    );
    const whole = rows.filter((row) => !aborted.includes(row));
    expect(aborted.length).toBeGreaterThan(0);
    for (const row of whole) expect(new Set(row.versions).size).toBe(1);
    const errors = worstErrors(whole);
    console.log(
      `abort-resubmit swap on real vLLM: ${aborted.length} aborted tries, ${agents.failures.length} streams ended with weights_swapped; max |recorded - recomputed| per kept call: ${errors.map((e) => e.toExponential(1)).join(', ')}`,
    );
    for (const error of errors) expect(error).toBeLessThan(1e-3);
    const batch = await swapBatch(result.gw.gateway.store, agents.rolloutIds, { currentVersion: 2, maxStaleness: 1 });
    const batched = new Set(batch.samples.flatMap((s) => s.sequence_ids.map((seq) => `${s.rollout_id}/${seq}`)));
    for (const row of aborted) expect(batched.has(`${row.span.rollout_id}/${row.span.sequence_id}`)).toBe(false);
  });
});
