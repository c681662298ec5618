// Pitfall 64: `rollgate serve` receives SIGTERM with 20 open streams. The streams finish within the grace period,
// their spans are in the store after exit, the log has no stack trace and the exit code is 0; streams longer than
// the grace period are cut at its end and the process still exits 0, promptly.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { silentLogger } from '../../src/logger.js';
import { createStore } from '../../src/store/core/create-store.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const CLI = join(ROOT, 'src/cli.ts');
const STREAMS = 20;

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

let dir: string;
let mock: MockVllm;
const live: ChildProcess[] = [];
const agentPool = new Agent({ connections: 64 });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-shutdown-'));
  // A long answer: max_tokens alone decides how long a stream runs.
  mock = await startMockVllm({ interTokenMs: 25, ttftMs: 5, respond: () => 'word '.repeat(1_000) });
});
afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await agentPool.destroy();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(name: string, graceMs: number, host = '127.0.0.1'): Promise<Served> {
  const config = join(dir, `${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      server: { host, port: 0, shutdownGraceMs: graceMs },
      store: { kind: 'sqlite', path: join(dir, `${name}.db`) },
      models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
      logging: { level: 'info' },
    }),
  );
  const child = spawn(process.execPath, ['--import', TSX_LOADER, CLI, 'serve', '-c', config], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.push(child);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.on('exit', (code, signal) => done({ code, signal }));
  });
  const url = await new Promise<string>((found, fail) => {
    const onData = () => {
      const match =
        /"msg":"listening"[^\n]*"url":"([^"]+)"/.exec(out) ?? /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(out);
      if (match?.[1] !== undefined) {
        child.stdout?.off('data', onData);
        found(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    void exited.then((exit) => fail(new Error(`serve exited early: ${JSON.stringify(exit)}\n${out}`)));
  });
  return { child, url, exited, output: () => out };
}

function agent(url: string, rid: string): OpenAI {
  return new OpenAI({
    baseURL: `${url}/rollout/${rid}/attempt/a1/v1`,
    apiKey: 'agent',
    maxRetries: 0,
    fetch: ((u: string, init?: Record<string, unknown>) =>
      undiciFetch(u, { ...init, dispatcher: agentPool })) as unknown as typeof fetch,
  });
}

async function openStreams(url: string, prefix: string, maxTokens: number) {
  const rids = Array.from({ length: STREAMS }, (_, i) => `${prefix}-${i}`);
  const streams = await Promise.all(
    rids.map((rid) =>
      agent(url, rid).chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'user', content: rid }],
        stream: true,
        max_tokens: maxTokens,
      }),
    ),
  );
  const texts = streams.map(async (stream) => {
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    return text;
  });
  return { rids, texts };
}

it('SIGTERM with 20 open streams: every stream completes, spans are flushed, exit 0, no stack trace', async () => {
  const served = await serve('drain', 20_000);
  const { rids, texts } = await openStreams(served.url, 'sd', 40);
  served.child.kill('SIGTERM');
  const results = await Promise.allSettled(texts);
  expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  for (const r of results) if (r.status === 'fulfilled') expect(r.value.length).toBeGreaterThan(0);
  const exit = await served.exited;
  expect(exit).toEqual({ code: 0, signal: null });
  expect(served.output()).not.toMatch(/\n\s+at /);
  expect(served.output()).not.toMatch(/unhandled/i);
  expect(served.output()).toContain('no API keys configured');

  const store = await createStore({ kind: 'sqlite', path: join(dir, 'drain.db') }, { logger: silentLogger });
  try {
    for (const rid of rids) {
      const spans = (await store.querySpans(rid)).items;
      expect(spans.map((s) => s.attributes[A.ATTR_STREAM_STATUS])).toEqual(['ok']);
    }
  } finally {
    await store.close();
  }
}, 60_000);

it('cuts streams longer than the grace period at its end and still exits 0', async () => {
  // Without API keys, a wildcard bind is refused in favour of loopback, and the start says so.
  const served = await serve('grace', 500, '0.0.0.0');
  expect(served.output()).toContain('binding 127.0.0.1 instead of 0.0.0.0');
  const { texts } = await openStreams(served.url, 'sg', 2_000);
  // Settled from the start: the cut streams reject while the test waits for the exit.
  const settled = Promise.allSettled(texts);
  const signalledAt = Date.now();
  served.child.kill('SIGTERM');
  const exit = await served.exited;
  const tookMs = Date.now() - signalledAt;
  expect(exit).toEqual({ code: 0, signal: null });
  // Grace 500 ms plus closing the store and the process; far below the 50 s the streams would need.
  expect(tookMs).toBeLessThan(10_000);
  const results = await settled;
  expect(results.every((r) => r.status === 'rejected')).toBe(true);
  expect(served.output()).not.toMatch(/\n\s+at /);
}, 60_000);
