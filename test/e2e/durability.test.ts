// A real `rollgate serve` process on a SQLite file: kill -9 it mid-write, start it again, and every acknowledged
// write is there with sequence ids continuing (docs/failure-classes.md#68). Also: a bad config exits 2 naming
// the key; SIGTERM closes gracefully with exit code 0.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServingProcess, spawnCli, startServe } from '../helpers/cli-process.js';
import { numberedSpan } from '../helpers/numbered-span.js';

/** `rollgate serve` on any free port. */
function serve(args: string[], cwd: string): Promise<ServingProcess> {
  return startServe(['--port', '0', ...args], { cwd });
}

async function post(url: string, body: unknown): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text);
}

function span(rid: string, aid: string, n: number) {
  const attributes = { 'gen_ai.request.model': 'm', prompt_token_ids: [n, n + 1, n + 2] };
  return numberedSpan({ rid, aid, n, name: `chat m-${n}`, attributes });
}

let dir: string;
const live: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-e2e-'));
});
afterAll(() => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('rollgate serve on SQLite', () => {
  it('loses no acknowledged write to kill -9 and continues sequence ids after restart', async () => {
    const db = join(dir, 'rollgate.db');
    const first = await serve(['--store', `sqlite:${db}`], dir);
    live.push(first.child);

    const enqueued: any[] = await post(`${first.url}/v1/agl/queues/rollouts/enqueue`, {
      rollouts: Array.from({ length: 5 }, (_, i) => ({ input: { i }, mode: 'train' })),
    });
    const started = await post(`${first.url}/v1/agl/rollouts`, { input: 'crash' });
    const rid: string = started.rollout_id;
    const aid: string = started.attempt.attempt_id;

    // A burst of span writes; the process dies while some are still in flight.
    const acknowledged: any[] = [];
    const writes = Array.from({ length: 60 }, (_, n) =>
      post(`${first.url}/v1/agl/spans`, span(rid, aid, n + 1)).then(
        (stored) => {
          acknowledged.push(stored);
        },
        () => undefined,
      ),
    );
    while (acknowledged.length < 20) await new Promise((r) => setTimeout(r, 1));
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await Promise.all(writes);
    expect(acknowledged.length).toBeGreaterThanOrEqual(20);

    const second = await serve(['--store', `sqlite:${db}`], dir);
    live.push(second.child);
    for (const rollout of enqueued) {
      const got = await (await fetch(`${second.url}/v1/agl/rollouts/${rollout.rollout_id}`)).json();
      expect(got).toMatchObject({ rollout_id: rollout.rollout_id, status: 'queuing', input: rollout.input });
    }
    const spans = await post(`${second.url}/v1/agl/spans/search`, { rollout_id: rid });
    const storedIds = new Set(spans.items.map((s: any) => s.span_id));
    for (const stored of acknowledged) expect(storedIds.has(stored.span_id)).toBe(true);
    const seqs: number[] = spans.items.map((s: any) => s.sequence_id);
    expect(new Set(seqs).size).toBe(seqs.length);

    const next = await post(`${second.url}/v1/agl/spans/next`, { rollout_id: rid, attempt_id: aid });
    expect(next.sequence_id).toBeGreaterThan(Math.max(...seqs));
    const reward = await post(`${second.url}/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, { value: 1 });
    expect(reward.sequence_id).toBeGreaterThan(next.sequence_id);
    const dequeued = await post(`${second.url}/v1/agl/queues/rollouts/dequeue`, { limit: 1 });
    expect(dequeued[0].rollout_id).toBe(enqueued[0].rollout_id);

    second.child.kill('SIGTERM');
    const exit = await second.exited;
    expect(exit.code).toBe(0);
    expect(second.stderr()).not.toMatch(/\n\s+at /);
  }, 90_000);
});

describe('rollgate serve shutdown', () => {
  it('drains in-flight requests on SIGTERM and exits at once on a second signal', async () => {
    const served = await serve(['--store', 'memory'], dir);
    live.push(served.child);
    // A request whose body is still arriving keeps the graceful close busy until the grace period ends.
    const { port } = new URL(served.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    // `Expect: 100-continue` makes the server say when it has the headers and is waiting for the body.
    const continued = new Promise<void>((resolveContinue) => {
      let seen = '';
      socket.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('100 Continue')) resolveContinue();
      });
    });
    socket.write(
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 64\r\nExpect: 100-continue\r\n\r\n',
    );
    await continued;
    socket.write('{"in');
    served.child.kill('SIGTERM');
    const early = await Promise.race([served.exited, new Promise((r) => setTimeout(() => r(null), 1_000))]);
    expect(early).toBeNull();
    served.child.kill('SIGINT');
    const exit = await served.exited;
    expect(exit.code).toBe(1);
    expect(served.stderr()).toContain('exiting now');
    socket.destroy();
  }, 60_000);
});

describe('rollgate serve config errors', () => {
  it('exits 2 and names the key when proxy.config.json is invalid', async () => {
    const bad = mkdtempSync(join(dir, 'bad-'));
    writeFileSync(join(bad, 'proxy.config.json'), JSON.stringify({ server: { port: 'eighty' } }));
    const proc = spawnCli(['serve'], { cwd: bad });
    live.push(proc.child);
    const exit = await proc.exited;
    expect(exit.code).toBe(2);
    expect(proc.stderr()).toContain('server.port');
    expect(proc.stderr()).toContain('expected number');
  }, 30_000);

  it('exits 2 naming the store flag for an unknown store spec', async () => {
    const proc = spawnCli(['serve', '--store', 'mysql://x'], { cwd: dir });
    live.push(proc.child);
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr()).toMatch(/store: expected memory, sqlite:PATH or postgres:\/\/URL/);
  }, 30_000);
});
