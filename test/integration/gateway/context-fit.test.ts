// Coding harnesses against a 32k engine (the engine twin in qwen3 mode: the real Qwen3 tokenizer and template):
// their 7k-12k token system prompts are recorded whole, with the engine's context length on every span
// (rollgate.engine.max_model_len, from its GET /v1/models), so `rollgate export` (read over the gateway's store API)
// and the RL batch keep a harness row whole under their default limits; and their fixed 32,000 max tokens, which
// such an engine refuses, are lowered by the pool's clampMaxTokens on the chat, Responses and Messages routes.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildBatch } from '../../../src/algorithms/rl/batch.js';
import { rlOptionsSchema } from '../../../src/algorithms/rl/options.js';
import { buildProgram } from '../../../src/cli.js';
import type { ExportRow } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startEngineTwin } from '../../servers/mock-vllm.js';

const CONTEXT = 32_768;
/** What Claude Code asks for when it does not know the model. */
const HARNESS_MAX_TOKENS = 32_000;
const ADMIN_KEY = 'admin-key-0123456789abcdef';
/** A harness-sized system prompt: well over 8k Qwen3 tokens. */
const SYSTEM = Array.from(
  { length: 700 },
  (_, i) => `Rule ${i}: read the file before you edit it, run the tests after each change, and report what failed.`,
).join('\n');

let twin: MockVllm;
let gw: TestGateway;
let anthropic: AnthropicAgents;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rollgate-context-fit-'));
  twin = await startEngineTwin({ tokenizer: 'qwen3', maxModelLen: CONTEXT });
  const pool = (name: string, clampMaxTokens?: Record<string, unknown>, mode: 'as-sent' | 'faithful' = 'as-sent') => ({
    name,
    upstreamModel: twin.model,
    backends: [{ url: twin.url }],
    history: mode === 'faithful' ? { mode, family: 'qwen3' } : { mode },
    ...(clampMaxTokens === undefined ? {} : { clampMaxTokens }),
  });
  gw = await startTestGateway({
    auth: { adminKeys: [ADMIN_KEY] },
    models: [
      pool('plain'),
      pool('fit', { toContext: true }),
      pool('capped', { atMost: 64 }),
      pool('faithful-fit', { toContext: true }, 'faithful'),
    ],
  });
  anthropic = anthropicAgents(gw.url, { apiKey: ADMIN_KEY });
});

afterAll(async () => {
  await anthropic?.close();
  await gw?.close();
  await twin?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function openai(rid: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: ADMIN_KEY, maxRetries: 0 });
}

async function onlySpan(rid: string): Promise<Span> {
  const spans = (await gw.gateway.store.querySpans(rid)).items;
  expect(spans).toHaveLength(1);
  return spans[0] as Span;
}

/** The body of the last generation request the engine got (not its /tokenize or /v1/models). */
function lastGeneration(): Record<string, unknown> {
  const paths = ['/v1/chat/completions', '/v1/completions', '/v1/responses'];
  const last = twin.requests.filter((r) => paths.includes(r.path)).at(-1);
  return (last?.body ?? {}) as Record<string, unknown>;
}

function overrides(span: Span): Record<string, unknown> {
  const raw = span.attributes[A.ATTR_REQUEST_OVERRIDES];
  return typeof raw === 'string' ? (JSON.parse(raw) as Record<string, unknown>) : {};
}

async function exportOverGateway(): Promise<{ rows: ExportRow[]; stderr: string }> {
  const out = join(dir, 'rows.jsonl');
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    const args = ['export', '--gateway', gw.url, '--api-key', ADMIN_KEY, '-o', out];
    await buildProgram().parseAsync(['node', 'rollgate', ...args]);
  } finally {
    spy.mockRestore();
  }
  expect(process.exitCode ?? 0).toBe(0);
  const rows = (await readFile(out, 'utf8'))
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ExportRow);
  return { rows, stderr: written.join('') };
}

describe('a harness-sized prompt becomes one whole training row', () => {
  it('records the engine context on the span; export and the RL batch keep the prompt whole by default', async () => {
    const rid = 'ro-harness';
    const answer = await openai(rid).chat.completions.create({
      model: 'plain',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Fix the failing test.' },
      ],
      max_tokens: 16,
    });
    expect(answer.choices[0]?.message).toBeDefined();
    const span = await onlySpan(rid);
    const promptIds = span.attributes.prompt_token_ids as number[];
    expect(promptIds.length).toBeGreaterThan(8000);
    expect(span.attributes[A.ATTR_ENGINE_MAX_MODEL_LEN]).toBe(CONTEXT);

    await gw.gateway.store.updateAttempt(rid, 'a1', { status: 'succeeded' });
    const { rows, stderr } = await exportOverGateway();
    expect(rows.map((r) => [r.rollout_id, r.is_drop])).toEqual([[rid, false]]);
    expect(rows[0]?.prompt_ids).toEqual(promptIds);
    expect(stderr).toContain('rollgate: exported 1 trajectory rows\n');
    expect(stderr).not.toContain('dropped');

    const defaults = rlOptionsSchema.parse({ model: 'plain' });
    const rollout = await gw.gateway.store.getRolloutById(rid);
    if (rollout === null) throw new Error('rollout missing');
    const batch = await buildBatch({
      store: gw.gateway.store,
      batchId: 'b',
      step: 0,
      rollouts: [{ rolloutId: rid, groupId: 'g' }],
      finished: new Map([[rid, rollout]]),
      currentVersion: 0,
      maxStaleness: defaults.maxStaleness,
      estimator: 'reinforce',
      normalizeStd: defaults.normalizeStd,
      level: defaults.level,
      maxPromptLength: defaults.maxPromptLength,
      maxResponseLength: defaults.maxResponseLength,
      rewardFillna: 1,
    });
    expect(batch.stats.dropped.overlong).toBe(0);
    expect(batch.samples.map((s) => s.prompt_ids)).toEqual([promptIds]);
  });
});

describe("clampMaxTokens keeps a harness's max tokens inside the engine's context", () => {
  const messages = [
    { role: 'system' as const, content: SYSTEM },
    { role: 'user' as const, content: 'Summarise the rules.' },
  ];

  it('without a clamp the engine refuses 32,000 max tokens after a 9k prompt', async () => {
    const call = openai('ro-plain').chat.completions.create({
      model: 'plain',
      messages,
      max_tokens: HARNESS_MAX_TOKENS,
    });
    await expect(call).rejects.toMatchObject({ status: 400 });
  });

  it('chat: lowered to the context left after the prompt; the span says so, the agent gets a normal answer', async () => {
    const answer = await openai('ro-chat').chat.completions.create({
      model: 'fit',
      messages,
      max_tokens: HARNESS_MAX_TOKENS,
    });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const span = await onlySpan('ro-chat');
    const prompt = (span.attributes.prompt_token_ids as number[]).length;
    expect(span.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBe(A.MAX_TOKENS_CLAMP_VALUE_CONTEXT);
    expect(overrides(span)).toMatchObject({ max_tokens: HARNESS_MAX_TOKENS });
    expect(lastGeneration()).toMatchObject({ max_tokens: CONTEXT - prompt });
  });

  it('Responses: max_output_tokens is lowered the same way', async () => {
    const answer = await openai('ro-responses').responses.create({
      model: 'fit',
      instructions: SYSTEM,
      input: 'Summarise the rules.',
      max_output_tokens: HARNESS_MAX_TOKENS,
    });
    expect(answer.status).toBe('completed');
    const span = await onlySpan('ro-responses');
    expect(span.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBe(A.MAX_TOKENS_CLAMP_VALUE_CONTEXT);
    expect(overrides(span)).toMatchObject({ max_output_tokens: HARNESS_MAX_TOKENS });
    // The prompt as the engine's Responses route rendered it (its raw prompt ids, recorded on the span).
    const prompt = (span.attributes.prompt_token_ids as number[]).length;
    expect(prompt).toBeGreaterThan(8000);
    expect(lastGeneration()).toMatchObject({ max_output_tokens: CONTEXT - prompt });
  });

  it('Messages API (Claude Code): its max_tokens is lowered through the chat translation', async () => {
    // Streamed, as Claude Code sends it (the SDK refuses a non-stream call with such a budget).
    const answer = await anthropic
      .client('ro-messages')
      .messages.stream({
        model: 'fit',
        system: SYSTEM,
        messages: [{ role: 'user', content: 'Summarise the rules.' }],
        max_tokens: HARNESS_MAX_TOKENS,
      })
      .finalMessage();
    expect(answer.stop_reason).toBe('end_turn');
    const span = await onlySpan('ro-messages');
    const prompt = (span.attributes.prompt_token_ids as number[]).length;
    expect(span.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBe(A.MAX_TOKENS_CLAMP_VALUE_CONTEXT);
    expect(lastGeneration()).toMatchObject({ max_tokens: CONTEXT - prompt });
  });

  it('faithful history: lowered to the context left after the spliced prompt, with no extra render', async () => {
    const tokenizeBefore = twin.requests.filter((r) => r.path === '/tokenize').length;
    const answer = await openai('ro-faithful').chat.completions.create({
      model: 'faithful-fit',
      messages,
      max_tokens: HARNESS_MAX_TOKENS,
    });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const span = await onlySpan('ro-faithful');
    const prompt = (span.attributes.prompt_token_ids as number[]).length;
    expect(span.attributes[A.ATTR_HISTORY_STATUS]).toBe(A.HISTORY_STATUS_VALUE_LINEAR);
    expect(span.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBe(A.MAX_TOKENS_CLAMP_VALUE_CONTEXT);
    // The token-in completion faithful history sends, with the budget that fits.
    expect(lastGeneration()).toMatchObject({ max_tokens: CONTEXT - prompt });
    // One render, faithful history's own: the clamp reads its prompt length.
    expect(twin.requests.filter((r) => r.path === '/tokenize').length).toBe(tokenizeBefore + 1);
  });

  it('atMost lowers any larger budget to the configured maximum, and leaves smaller ones alone', async () => {
    await openai('ro-capped').chat.completions.create({
      model: 'capped',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 1000,
    });
    const span = await onlySpan('ro-capped');
    expect(span.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBe(A.MAX_TOKENS_CLAMP_VALUE_AT_MOST);
    expect(overrides(span)).toMatchObject({ max_completion_tokens: 1000 });
    expect(lastGeneration()).toMatchObject({ max_completion_tokens: 64 });

    await openai('ro-small').chat.completions.create({
      model: 'capped',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 8,
    });
    const small = await onlySpan('ro-small');
    expect(small.attributes[A.ATTR_REQUEST_MAX_TOKENS_CLAMP]).toBeUndefined();
    expect(overrides(small)).not.toHaveProperty('max_tokens');
  });
});
