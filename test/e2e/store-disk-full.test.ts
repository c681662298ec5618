// A real `rollgate serve` on SQLite whose file writes start failing at run time (RLIMIT_FSIZE: the OS answers
// EFBIG past a size, as a full disk answers ENOSPC). A write the store could not commit is never acknowledged,
// `/ready` turns 503 with the database's own reason, the loss is logged at error level once, and
// rollgate_store_writable drops to 0 (docs/durability.md).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { type ServingProcess, startServe } from '../helpers/cli-process.js';
import { numberedSpan } from '../helpers/numbered-span.js';

const dir = mkdtempSync(join(tmpdir(), 'rollgate-full-'));
let served: ServingProcess | undefined;
afterAll(() => {
  if (served !== undefined && served.child.exitCode === null) served.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Spans of ~100 KB: the write-ahead log reaches the limit within a few dozen. Random, because the store compresses
 * span bodies (docs/store.md): a repeated character would take a few bytes on disk and never fill it.
 */
function bigSpan(rid: string, aid: string, n: number): Record<string, unknown> {
  const filler = randomBytes(75_000).toString('base64');
  return numberedSpan({ rid, aid, n, name: `span-${n}`, attributes: { filler } });
}

async function postJson(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

it('never acknowledges a write the full disk refused, and turns /ready red with the reason', async () => {
  const db = join(dir, 'rollgate.db');
  served = await startServe(['--port', '0', '--store', `sqlite:${db}`], {
    cwd: dir,
    fileSizeLimitBytes: 6 * 1024 * 1024,
  });
  const { url } = served;
  expect((await fetch(`${url}/ready`)).status).toBe(200);
  const started = (await (await postJson(`${url}/v1/agl/rollouts`, { input: 'fill' })).json()) as {
    rollout_id: string;
    attempt: { attempt_id: string };
  };
  const rid = started.rollout_id;
  const aid = started.attempt.attempt_id;

  const acknowledged: string[] = [];
  let refused: Response | null = null;
  for (let n = 1; n <= 400 && refused === null; n++) {
    const span = bigSpan(rid, aid, n);
    const response = await postJson(`${url}/v1/agl/spans`, span);
    if (response.ok) acknowledged.push(String(span.span_id));
    else refused = response;
    await response.arrayBuffer().catch(() => undefined);
  }
  // Retryable: the disk refused, not the request (docs/durability.md).
  expect(refused?.status).toBe(503);
  expect(refused?.headers.get('x-should-retry')).toBe('true');
  expect(acknowledged.length).toBeGreaterThan(0);

  // Everything acknowledged is stored; nothing else is.
  const stored = (await (await postJson(`${url}/v1/agl/spans/search`, { rollout_id: rid, limit: 500 })).json()) as {
    items: Array<{ span_id: string }>;
    total: number;
  };
  expect(stored.total, 'one page holds every stored span').toBe(stored.items.length);
  expect(stored.items.map((s) => s.span_id)).toEqual(acknowledged);

  // /ready caches its probe for about a second.
  await new Promise((r) => setTimeout(r, 1_100));
  const ready = await fetch(`${url}/ready`);
  const body = (await ready.json()) as { ready: boolean; reason: string };
  expect(ready.status).toBe(503);
  expect(body.ready).toBe(false);
  expect(body.reason).toMatch(/SQLITE_(IOERR|FULL)/);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  expect(metrics).toContain('rollgate_store_writable 0');

  served.child.kill('SIGTERM');
  await served.exited;
  const lost = served
    .stdout()
    .split('\n')
    .filter((line) => line.includes('"store cannot make writes durable"'));
  expect(lost).toHaveLength(1);
}, 90_000);
