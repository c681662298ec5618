// `/ready` tells the truth about the store (docs/durability.md): a SQLite file deleted while the gateway runs
// would take every later write with it on restart, so readiness turns red with the reason, the loss is logged at
// error level once and shows in rollgate_store_writable, writes are refused instead of acknowledged, and a call is
// answered as unrecorded (503) instead of 200. `/health` stays a liveness check.
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from './harness.js';

const errors: Array<{ message: string; fields: LogFields | undefined }> = [];
const capture: Logger = {
  debug() {},
  info() {},
  warn() {},
  error: (message, fields) => errors.push({ message, fields }),
  child: () => capture,
};

const dir = mkdtempSync(join(tmpdir(), 'rollgate-ready-'));
const path = join(dir, 'rollgate.db');
let mock: MockVllm;
let gw: TestGateway;
beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway(
    { store: { kind: 'sqlite', path }, models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] },
    { logger: capture },
  );
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function ready(): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${gw.url}/ready`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function storeWritableGauge(): Promise<string | undefined> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return text.split('\n').find((line) => line.startsWith('rollgate_store_writable '));
}

/** /ready caches its probe for about a second. */
async function readyAfterCache(): Promise<{ status: number; body: Record<string, unknown> }> {
  await new Promise((r) => setTimeout(r, 1_100));
  return ready();
}

function agent(rid: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'k', maxRetries: 0 });
}

const CHAT = { model: 'mock-model', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 4 };

describe('a SQLite store whose file is deleted at run time', () => {
  const rid = rolloutId('gone');

  it('is ready while the file is in place', async () => {
    await agent(rid).chat.completions.create(CHAT);
    expect((await gw.gateway.store.querySpans(rid)).items).toHaveLength(1);
    const answer = await ready();
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ready: true, store: { writable: true } });
    expect(await storeWritableGauge()).toBe('rollgate_store_writable 1');
  });

  it('turns readiness red with the reason, logs it once at error level and raises the metric', async () => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    const first = await readyAfterCache();
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ ready: false, store: { writable: false } });
    expect(String(first.body.reason)).toContain('deleted');
    expect(await storeWritableGauge()).toBe('rollgate_store_writable 0');
    expect((await readyAfterCache()).status).toBe(503);
    const logged = errors.filter((e) => e.message === 'store cannot make writes durable');
    expect(logged).toHaveLength(1);
    expect(String(logged[0]?.fields?.reason)).toContain('deleted');
  });

  it('keeps /health a liveness answer', async () => {
    const response = await fetch(`${gw.url}/health`);
    expect(response.status).toBe(200);
  });

  it('refuses writes it could not keep, and answers a call as unrecorded instead of 200', async () => {
    const write = await fetch(`${gw.url}/v1/agl/rollouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'after the file is gone' }),
    });
    // Retryable: the storage refused, not the request (the same write succeeds once the file is back).
    expect(write.status).toBe(503);
    expect(write.headers.get('x-should-retry')).toBe('true');
    expect(((await write.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    // A call on the rollout made before: its span cannot be kept, so the call is not a success.
    const error = await agent(rid)
      .chat.completions.create(CHAT)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).code).toBe('recording_failed');
  });
});

it('checks the file without waiting for /ready (the periodic check)', async () => {
  const own = join(dir, 'periodic.db');
  let logged: (message: string) => void = () => undefined;
  const firstError = new Promise<string>((resolve) => {
    logged = resolve;
  });
  const logger: Logger = { ...capture, error: (message) => logged(message), child: () => logger };
  const other = await startTestGateway({ store: { kind: 'sqlite', path: own } }, { logger });
  try {
    unlinkSync(own);
    // Nobody asks /ready here: the store's own check (every 2 s) must notice.
    expect(await firstError).toBe('store cannot make writes durable');
  } finally {
    await other.close();
  }
});
