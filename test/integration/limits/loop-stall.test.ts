// No single request holds the event loop (docs/input-limits.md, "Requests that do a lot of work"): for each route
// family the largest request the limits allow runs while another client polls /health on its own connection, and
// every /health answers within 50 ms. Before the work was sliced, one enqueue of 10,000 rollouts held /health for
// seconds on SQLite. Runs on SQLite, and on PostgreSQL when ROLLGATE_TEST_PG_URL is set.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_LIMITS } from '../../../src/store/core/request-limits.js';
import { type ServingProcess, startServe } from '../../helpers/cli-process.js';
import { exportRequestType } from '../otlp/otlp-test-helpers.js';
import { type HealthFigures, timeHealthDuring } from './health-poller.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
/** Every /health answer while the largest legal request runs. */
const HEALTH_BUDGET_MS = 50;
/** Enough to fill a page of every list route. */
const STORED_ROLLOUTS = REQUEST_LIMITS.waitRolloutIds;

type StoreKind = 'sqlite' | 'postgres';
const kinds: StoreKind[] = PG_URL === undefined ? ['sqlite'] : ['sqlite', 'postgres'];

async function post(url: string, path: string, body: string | Uint8Array, type = 'application/json') {
  const response = await fetch(url + path, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: response.status, text: await response.text() };
}

/**
 * Every /health answered within the budget: in the gateway's CPU time where Linux tells it (a loaded machine's wait
 * for a core is not the gateway's stall), in wall time elsewhere.
 */
function expectNoStall(figures: HealthFigures): void {
  expect(figures.probes).toBeGreaterThan(0);
  expect(figures.maxHealthCpuMs ?? figures.maxHealthMs).toBeLessThan(HEALTH_BUDGET_MS);
}

function report(family: string, kind: StoreKind, figures: HealthFigures): void {
  // The figures of each run, for docs/input-limits.md; vitest shows them with --reporter=verbose.
  console.info(
    `${kind} ${family}: request ${figures.requestMs.toFixed(0)} ms, slowest /health ${figures.maxHealthMs.toFixed(1)} ms ` +
      `(gateway CPU meanwhile ${figures.maxHealthCpuMs?.toFixed(1) ?? 'unknown'} ms, ${figures.probes} probes)`,
  );
}

function otlpSpans(rid: string, aid: string, count: number, offset = 0) {
  return Array.from({ length: count }, (_, i) => ({
    traceId: randomBytes(16).toString('hex'),
    spanId: (offset + i + 1).toString(16).padStart(16, '0'),
    name: `tool.call.${i}`,
    kind: 1,
    startTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)),
    endTimeUnixNano: String(1_700_000_001_000_000_000n + BigInt(i)),
    attributes: [
      { key: 'agentlightning.rollout_id', value: { stringValue: rid } },
      { key: 'agentlightning.attempt_id', value: { stringValue: aid } },
      { key: 'tool.output', value: { stringValue: 'x'.repeat(200) } },
    ],
    status: {},
  }));
}

function otlpJson(rid: string, aid: string, count: number, offset: number): string {
  return JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: otlpSpans(rid, aid, count, offset) }] }] });
}

function otlpProtobuf(rid: string, aid: string, count: number, offset: number): Uint8Array {
  const spans = otlpSpans(rid, aid, count, offset).map((span) => ({
    ...span,
    traceId: Buffer.from(span.traceId, 'hex'),
    spanId: Buffer.from(span.spanId, 'hex'),
  }));
  return exportRequestType
    .encode(exportRequestType.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] }))
    .finish();
}

describe.each(kinds)('the largest legal request of each family on %s', (kind) => {
  let gw: ServingProcess;
  let dropSchema = async () => {};
  let rid = '';
  let aid = '';
  const storedIds: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-limits-'));

  beforeAll(async () => {
    let store = `sqlite:${join(dir, 'limits.db')}`;
    if (kind === 'postgres') {
      const schema = `rollgate_limits_${randomBytes(4).toString('hex')}`;
      const base = PG_URL as string;
      store = `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`;
      dropSchema = async () => {
        const admin = new pg.Client({ connectionString: base });
        await admin.connect();
        try {
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await admin.end();
        }
      };
    }
    // A process of its own, as in production: the figures are the gateway's, not this test's own work (building
    // bodies, reading answers, its garbage collection).
    gw = await startServe(['--port', '0', '--store', store], { cwd: dir });
    const started = await post(gw.url, '/v1/agl/rollouts', JSON.stringify({ input: { task: 'spans' } }));
    const rollout = JSON.parse(started.text) as { rollout_id: string; attempt: { attempt_id: string } };
    rid = rollout.rollout_id;
    aid = rollout.attempt.attempt_id;
    for (let at = 0; at < STORED_ROLLOUTS; at += REQUEST_LIMITS.enqueueRollouts) {
      const count = Math.min(REQUEST_LIMITS.enqueueRollouts, STORED_ROLLOUTS - at);
      const rollouts = Array.from({ length: count }, (_, i) => ({ input: { task: `stored-${at + i}` } }));
      const stored = await post(gw.url, '/v1/agl/queues/rollouts/enqueue', JSON.stringify({ rollouts }));
      expect(stored.status, stored.text.slice(0, 300)).toBe(201);
      storedIds.push(...(JSON.parse(stored.text) as Array<{ rollout_id: string }>).map((r) => r.rollout_id));
    }
    // One request of each family first: what is measured is the work of a large request, not the first compilation
    // of its code or a module loaded on first use.
    await Promise.all([
      post(gw.url, '/v1/agl/waits/rollouts', JSON.stringify({ rollout_ids: storedIds.slice(0, 10), timeout: 0 })),
      post(gw.url, '/v1/traces', otlpJson(rid, aid, 1000, 1e6)),
      post(gw.url, '/v1/traces', otlpProtobuf(rid, aid, 1000, 2e6), 'application/x-protobuf'),
      fetch(`${gw.url}/v1/agl/rollouts?limit=10`).then((r) => r.text()),
    ]);
  }, 120_000);

  const target = () => ({ url: gw.url, pid: gw.child.pid as number });

  afterAll(async () => {
    gw?.child.kill('SIGKILL');
    await gw?.exited;
    await dropSchema();
    rmSync(dir, { recursive: true, force: true });
  });

  it('enqueue: every /health answers in time while the most rollouts one request may enqueue are stored', async () => {
    const body = JSON.stringify({
      rollouts: Array.from({ length: REQUEST_LIMITS.enqueueRollouts }, (_, i) => ({
        input: { task: `task-${i}`, prompt: 'p'.repeat(100) },
        mode: 'train',
      })),
    });
    const { figures, result } = await timeHealthDuring(target(), () =>
      post(gw.url, '/v1/agl/queues/rollouts/enqueue', body),
    );
    report('enqueue', kind, figures);
    expect(result.status, result.text.slice(0, 300)).toBe(201);
    expect((JSON.parse(result.text) as unknown[]).length).toBe(REQUEST_LIMITS.enqueueRollouts);
    expectNoStall(figures);
  }, 120_000);

  it('wait: every /health answers in time while the most rollout ids one wait may name are checked', async () => {
    const body = JSON.stringify({ rollout_ids: storedIds.slice(0, REQUEST_LIMITS.waitRolloutIds), timeout: 0 });
    const { figures, result } = await timeHealthDuring(target(), () => post(gw.url, '/v1/agl/waits/rollouts', body));
    report('wait', kind, figures);
    expect(result.status, result.text.slice(0, 300)).toBe(200);
    expect(JSON.parse(result.text)).toEqual([]);
    expectNoStall(figures);
  }, 120_000);

  it('OTLP JSON: every /health answers in time while the most spans one export may carry are stored', async () => {
    const body = otlpJson(rid, aid, REQUEST_LIMITS.otlpSpans, 0);
    const { figures, result } = await timeHealthDuring(target(), () => post(gw.url, '/v1/traces', body));
    report('otlp-json', kind, figures);
    expect(result.status, result.text.slice(0, 300)).toBe(200);
    expect(result.text).toBe('{}');
    expectNoStall(figures);
  }, 120_000);

  it('OTLP protobuf: every /health answers in time while the most spans one export may carry are stored', async () => {
    const body = otlpProtobuf(rid, aid, REQUEST_LIMITS.otlpSpans, REQUEST_LIMITS.otlpSpans);
    const { figures, result } = await timeHealthDuring(target(), () =>
      post(gw.url, '/v1/traces', body, 'application/x-protobuf'),
    );
    report('otlp-protobuf', kind, figures);
    expect(result.status).toBe(200);
    expectNoStall(figures);
  }, 120_000);

  it('queries: every /health answers in time while the largest pages of rollouts and spans are read', async () => {
    const { figures, result } = await timeHealthDuring(target(), async () => {
      const rollouts = await fetch(`${gw.url}/v1/agl/rollouts?limit=-1&sort_by=rollout_id`);
      const spans = await fetch(`${gw.url}/v1/agl/spans?rollout_id=${rid}&limit=-1`);
      const completions = await fetch(`${gw.url}/v1/agl/completions`);
      return [
        (await rollouts.json()) as { items: unknown[] },
        (await spans.json()) as { items: unknown[] },
        completions.status,
      ] as const;
    });
    report('queries', kind, figures);
    expect(result[0].items.length).toBeGreaterThan(0);
    expect(result[1].items.length).toBeGreaterThan(0);
    expect(result[2]).toBe(200);
    expectNoStall(figures);
  }, 120_000);
});
