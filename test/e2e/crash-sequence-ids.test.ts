// Sequence ids survive a SIGKILL at the worst moment: a real `rollgate serve` on SQLite, agents (the official
// openai SDK) calling through it while a span writer and a sequence reader run per rollout, and the process killed
// the instant a sequence id reaches a client. After a restart on the same file every id a client was given stays
// given: what each rollout hands out keeps strictly increasing, and no stored span shares an id (docs/architecture.md, "The path of one call").
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServingProcess, startServe } from '../helpers/cli-process.js';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';

const ROLLOUTS = 4;
/** The kill comes the instant the K-th sequence id is answered, with writes and generations still in flight. */
const KILL_AT_ACKNOWLEDGED = 40;

let dir: string;
let twin: MockVllm;
const live: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-crash-seq-'));
  // Slow enough generations that some are mid-stream when the process dies.
  twin = await startEngineTwin({ latencyMs: 5, ttftMs: 5 });
  writeFileSync(
    join(dir, 'proxy.config.json'),
    JSON.stringify({ models: [{ name: 'mock-model', backends: [{ url: twin.url }] }] }),
  );
});

afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await twin?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(db: string): Promise<ServingProcess> {
  const proc = await startServe(['--port', '0', '--store', `sqlite:${db}`], { cwd: dir });
  live.push(proc.child);
  return proc;
}

interface Answer {
  readonly status: number;
  readonly body: any;
}

async function post(url: string, path: string, body: unknown): Promise<Answer> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

function span(rid: string, aid: string, n: number) {
  return {
    rollout_id: rid,
    attempt_id: aid,
    trace_id: n.toString(16).padStart(32, '0'),
    span_id: n.toString(16).padStart(16, '0'),
    parent_id: null,
    name: `tool-${n}`,
    status: { status_code: 'OK' },
    attributes: { n },
    events: [],
    links: [],
    start_time: 1_700_000_000 + n,
    end_time: 1_700_000_001 + n,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

interface Rollout {
  readonly rid: string;
  readonly aid: string;
  /** Every sequence id the gateway answered for this rollout, in the order the answers came. */
  readonly acknowledged: number[];
  /** The ids /spans/next reserved (no span of the gateway's may take one of them). */
  readonly reserved: number[];
}

/**
 * One rollout's traffic, each step awaited before the next so its answers must come in increasing order: a
 * sequence id from /spans/next, a span write (the id it was stored under), an agent's chat call.
 */
/** Asked after each answer (and before each step): whether to stop; `after` says which answer just came. */
type StopCheck = (after: 'loop' | 'next' | 'span') => boolean;

async function drive(options: { url: string; rollout: Rollout; stop: StopCheck; from: number }): Promise<void> {
  const { url, rollout, stop } = options;
  const agent = new OpenAI({
    baseURL: `${url}/rollout/${rollout.rid}/attempt/${rollout.aid}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 15_000,
  });
  for (let n = options.from; !stop('loop'); n++) {
    const next = await post(url, '/v1/agl/spans/next', { rollout_id: rollout.rid, attempt_id: rollout.aid });
    if (next.status !== 200) return;
    rollout.acknowledged.push(next.body.sequence_id);
    rollout.reserved.push(next.body.sequence_id);
    if (stop('next')) return;
    const written = await post(url, '/v1/agl/spans', span(rollout.rid, rollout.aid, n));
    if (written.status < 200 || written.status > 299) return;
    rollout.acknowledged.push(written.body.sequence_id);
    if (stop('span')) return;
    await agent.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: `step ${n}` }],
      max_tokens: 8,
      stream: n % 2 === 0,
    });
  }
}

function expectStrictlyIncreasing(values: readonly number[], what: string): void {
  for (let i = 1; i < values.length; i++) {
    expect(values[i], `${what}: id ${values[i]} answered after ${values[i - 1]} (position ${i})`).toBeGreaterThan(
      values[i - 1] as number,
    );
  }
}

it('never hands out a sequence id twice across a SIGKILL the instant one was answered', async () => {
  const db = join(dir, 'store.db');
  const first = await serve(db);
  const rollouts: Rollout[] = [];
  for (let i = 0; i < ROLLOUTS; i++) {
    const started = await post(first.url, '/v1/agl/rollouts', { input: { i } });
    expect(started.status).toBe(201);
    rollouts.push({
      rid: started.body.rollout_id,
      aid: started.body.attempt.attempt_id,
      acknowledged: [],
      reserved: [],
    });
  }

  // The kill is sent synchronously from a /spans/next answer past the threshold: that id is above every stored
  // span, so only a reservation made durable before the answer keeps it from being handed out again, and nothing
  // the store does after answering (a deferred counter write, a batched commit) gets a turn before the kill.
  let killed = false;
  const total = () => rollouts.reduce((n, r) => n + r.acknowledged.length, 0);
  const stopOrKill: StopCheck = (after) => {
    if (!killed && after === 'next' && total() >= KILL_AT_ACKNOWLEDGED) {
      killed = true;
      first.child.kill('SIGKILL');
    }
    return killed;
  };
  await Promise.all(
    rollouts.map((rollout) => drive({ url: first.url, rollout, stop: stopOrKill, from: 1 }).catch(() => undefined)),
  );
  expect(killed).toBe(true);
  expect((await first.exited).signal).toBe('SIGKILL');
  const before = rollouts.map((r) => [...r.acknowledged]);

  const second = await serve(db);
  let rounds = 0;
  await Promise.all(
    rollouts.map((rollout) => drive({ url: second.url, rollout, stop: () => rounds++ > ROLLOUTS * 12, from: 1_000 })),
  );

  for (const [i, rollout] of rollouts.entries()) {
    const pre = before[i] as number[];
    expect(rollout.acknowledged.length, 'the restarted gateway answered').toBeGreaterThan(pre.length);
    expectStrictlyIncreasing(rollout.acknowledged, `rollout ${rollout.rid}`);
    const stored = await post(second.url, '/v1/agl/spans/search', { rollout_id: rollout.rid, limit: 500 });
    expect(stored.body.total, 'one page holds every stored span').toBe(stored.body.items.length);
    const seqs: number[] = stored.body.items.map((s: { sequence_id: number }) => s.sequence_id);
    expect(new Set(seqs).size, `stored spans of ${rollout.rid} share a sequence id`).toBe(seqs.length);
    // The agent's calls were recorded under ids of their own, never one a client had already been given.
    const chatSeqs = stored.body.items
      .filter((s: { name: string }) => !s.name.startsWith('tool-'))
      .map((s: { sequence_id: number }) => s.sequence_id);
    expect(chatSeqs.length).toBeGreaterThan(0);
    const given = new Set(rollout.reserved);
    for (const seq of chatSeqs) expect(given.has(seq), `chat span got reserved id ${seq}`).toBe(false);
  }

  second.child.kill('SIGTERM');
  expect((await second.exited).code).toBe(0);
}, 120_000);
