// The ONE LightningStore contract suite (docs/architecture.md): every backend runs it unchanged.
// It covers docs/architecture.md and the group E failure classes (docs/failure-classes.md) Keep it backend-agnostic (only the LightningStore interface)
// and keep time-based cases short (watchdog ~50 ms, timeouts 0.1-0.3 s).
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/json-depth.js';
import { isStoreError, type StoreErrorCode } from '../../src/store/core/errors.js';
import { isFinishedRefusal } from '../../src/store/core/rollout-status.js';
import type {
  AttemptedRollout,
  JsonObject,
  LightningStore,
  Rollout,
  RolloutConfig,
  RolloutLifecycle,
  Span,
  SpanInput,
} from '../../src/store/core/types.js';

export interface StoreContractFactory {
  create(options: { watchdogIntervalMs: number }): Promise<LightningStore>;
  /** Close the store last returned and open the same durable store again (crash/restart cases). */
  reopen?(): Promise<LightningStore>;
  /**
   * The backend is a client of the v0.3 REST API, where an explicit null on an attempt update is a 400
   * (docs/store.md, docs/failure-classes.md#37): it cannot clear an attempt's fields, and says so with invalid_argument.
   */
  readonly restApi?: boolean;
}

const WATCHDOG_MS = 50;

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export function makeSpan(
  rolloutId: string,
  attemptId: string,
  overrides: Partial<SpanInput> & Record<string, unknown> = {},
): SpanInput {
  const traceId = hex(16);
  const spanId = hex(8);
  return {
    rollout_id: rolloutId,
    attempt_id: attemptId,
    trace_id: traceId,
    span_id: spanId,
    parent_id: null,
    name: 'chat test-model',
    status: { status_code: 'OK', description: null },
    attributes: { 'gen_ai.request.model': 'test-model' },
    events: [],
    links: [],
    start_time: 1_700_000_000,
    end_time: 1_700_000_001,
    context: { trace_id: traceId, span_id: spanId, is_remote: false, trace_state: {} },
    parent: null,
    resource: { attributes: { 'service.name': 'contract' }, schema_url: '' },
    ...overrides,
  };
}

async function expectStoreError(
  promise: Promise<unknown>,
  code: StoreErrorCode,
  options: { param?: string; message?: RegExp | string } = {},
): Promise<void> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(isStoreError(caught), `expected StoreError(${code}), got ${String(caught)}`).toBe(true);
  if (!isStoreError(caught)) return;
  expect(caught.code).toBe(code);
  if (options.param !== undefined) expect(caught.param).toBe(options.param);
  if (options.message !== undefined) expect(caught.message).toMatch(options.message);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls a condition on the store (test-side only) with a generous deadline for a loaded machine. */
async function eventually(check: () => Promise<boolean>, deadlineMs = 3_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(20);
  }
  expect(await check(), 'condition not met before the deadline').toBe(true);
}

/** `{"a":{"a":...1}}` with `depth` objects. */
function nested(depth: number): JsonObject {
  let value: JsonObject = { a: 1 };
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

/** One level past what every store (and the HTTP edge) accepts. */
const TOO_DEEP = MAX_JSON_DEPTH + 1;

function cfg(config: Partial<RolloutConfig>): Partial<RolloutConfig> {
  return config;
}

function attemptOf(rollout: Rollout | AttemptedRollout | null): AttemptedRollout['attempt'] | undefined {
  return rollout !== null && 'attempt' in rollout ? rollout.attempt : undefined;
}

export function describeStoreContract(name: string, factory: StoreContractFactory): void {
  describe(`LightningStore contract: ${name}`, () => {
    let store: LightningStore;

    beforeEach(async () => {
      store = await factory.create({ watchdogIntervalMs: WATCHDOG_MS });
    });

    afterEach(async () => {
      await store.close();
    });

    async function started(config?: Partial<RolloutConfig>, workerId?: string): Promise<AttemptedRollout> {
      return store.startRollout({
        input: { task: 'x' },
        ...(config === undefined ? {} : { config }),
        ...(workerId === undefined ? {} : { worker_id: workerId }),
      });
    }

    describe('rollouts and the queue (docs/architecture.md)', () => {
      it('enqueues with defaults: queuing, no attempt, start_time now, default config, metadata {}', async () => {
        const before = Date.now() / 1000;
        const rollout = await store.enqueueRollout({ input: { q: 1 } });
        expect(rollout.rollout_id).toMatch(/^ro-[0-9a-f]{12}$/);
        expect(rollout.status).toBe('queuing');
        expect(rollout.start_time).toBeGreaterThanOrEqual(before - 1);
        expect(rollout.start_time).toBeLessThanOrEqual(Date.now() / 1000 + 1);
        expect(rollout).toMatchObject({
          end_time: null,
          mode: null,
          resources_id: null,
          metadata: {},
          input: { q: 1 },
        });
        expect(rollout.config).toEqual({
          timeout_seconds: null,
          unresponsive_seconds: null,
          max_attempts: 1,
          retry_condition: [],
        });
        expect('attempt' in rollout).toBe(false);
        expect(await store.getLatestAttempt(rollout.rollout_id)).toBeNull();
        const fetched = await store.getRolloutById(rollout.rollout_id);
        expect(fetched).toEqual(rollout);
      });

      it('dequeues FIFO, creating attempt #1 (preparing); an empty queue gives null', async () => {
        const a = await store.enqueueRollout({ input: 'a' });
        const [b, c] = await store.enqueueManyRollouts([
          { input: 'b', mode: 'train' },
          { input: 'c', mode: 'val' },
        ]);
        expect(b?.input).toBe('b');
        expect(c?.mode).toBe('val');
        const order: string[] = [];
        for (let i = 0; i < 3; i++) {
          const claimed = await store.dequeueRollout();
          expect(claimed).not.toBeNull();
          expect(claimed?.status).toBe('preparing');
          expect(claimed?.attempt).toMatchObject({
            sequence_id: 1,
            status: 'preparing',
            rollout_id: claimed?.rollout_id,
          });
          expect(claimed?.attempt.attempt_id).toMatch(/^at-[0-9a-f]{8}$/);
          order.push(claimed?.rollout_id ?? '');
        }
        expect(order).toEqual([a.rollout_id, b?.rollout_id, c?.rollout_id]);
        expect(await store.dequeueRollout()).toBeNull();
        expect(await store.enqueueManyRollouts([])).toEqual([]);
      });

      it('dequeueMany returns up to limit in order; limit <= 0 returns []', async () => {
        const rollouts = await store.enqueueManyRollouts([{ input: 1 }, { input: 2 }, { input: 3 }]);
        expect(await store.dequeueManyRollouts({ limit: 0 })).toEqual([]);
        expect(await store.dequeueManyRollouts({ limit: -3 })).toEqual([]);
        const first = await store.dequeueManyRollouts({ limit: 2 });
        expect(first.map((r) => r.rollout_id)).toEqual(rollouts.slice(0, 2).map((r) => r.rollout_id));
        const rest = await store.dequeueManyRollouts({ limit: 5 });
        expect(rest.map((r) => r.rollout_id)).toEqual([rollouts[2]?.rollout_id]);
      });

      it('startRollout bypasses the queue with attempt #1 preparing', async () => {
        const rollout = await started();
        expect(rollout.status).toBe('preparing');
        expect(rollout.attempt).toMatchObject({ sequence_id: 1, status: 'preparing' });
        expect(await store.dequeueRollout()).toBeNull();
        const fetched = await store.getRolloutById(rollout.rollout_id);
        expect(attemptOf(fetched)?.attempt_id).toBe(rollout.attempt.attempt_id);
      });

      it('defaults resources_id to the latest resources, keeps an explicit one', async () => {
        expect((await store.enqueueRollout({ input: 1 })).resources_id).toBeNull();
        const res = await store.addResources({
          prompt: { resource_type: 'prompt_template', template: 'hi {x}', engine: 'f-string' },
        });
        expect((await store.enqueueRollout({ input: 1 })).resources_id).toBe(res.resources_id);
        expect((await started()).resources_id).toBe(res.resources_id);
        expect((await store.enqueueRollout({ input: 1, resources_id: 'rs-explicit' })).resources_id).toBe(
          'rs-explicit',
        );
      });

      it('requeuing a started rollout twice enqueues it exactly once (docs/failure-classes.md#33)', async () => {
        const rollout = await started();
        await store.updateRollout(rollout.rollout_id, { status: 'requeuing' });
        await store.updateRollout(rollout.rollout_id, { status: 'requeuing' });
        const claimed = await store.dequeueRollout();
        expect(claimed?.rollout_id).toBe(rollout.rollout_id);
        expect(claimed?.attempt).toMatchObject({ sequence_id: 2, status: 'preparing' });
        expect(await store.dequeueRollout()).toBeNull();
      });

      it('dequeue skips queue entries whose rollout is no longer queuing', async () => {
        const a = await store.enqueueRollout({ input: 'a' });
        const b = await store.enqueueRollout({ input: 'b' });
        await store.updateRollout(a.rollout_id, { status: 'cancelled' });
        const claimed = await store.dequeueRollout();
        expect(claimed?.rollout_id).toBe(b.rollout_id);
        expect(await store.dequeueRollout()).toBeNull();
        expect((await store.getRolloutById(a.rollout_id))?.status).toBe('cancelled');
      });

      it('startAttempt creates a new preparing attempt and ignores max_attempts', async () => {
        const rollout = await started({ max_attempts: 1 });
        await store.updateAttempt(rollout.rollout_id, rollout.attempt.attempt_id, { status: 'failed' });
        expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('failed');
        const retry = await store.startAttempt(rollout.rollout_id);
        expect(retry.status).toBe('preparing');
        expect(retry.attempt).toMatchObject({ sequence_id: 2, status: 'preparing' });
        expect(retry.end_time).toBeNull();
        const attempts = await store.queryAttempts(rollout.rollout_id);
        expect(attempts.items.map((a) => a.sequence_id)).toEqual([1, 2]);
        expect(attempts.total).toBe(2);
      });

      it('enqueue with a client-supplied rollout_id is idempotent (spans intact)', async () => {
        const first = await store.enqueueRollout({ input: { v: 1 }, rollout_id: 'ro-client-1' });
        expect(first.rollout_id).toBe('ro-client-1');
        const claimed = await store.dequeueRollout();
        await store.addSpan(makeSpan('ro-client-1', claimed?.attempt.attempt_id ?? ''));
        const again = await store.enqueueRollout({ input: { v: 2 }, rollout_id: 'ro-client-1' });
        expect(again.input).toEqual({ v: 1 });
        expect(again.status).toBe('running');
        const many = await store.enqueueManyRollouts([
          { input: 3, rollout_id: 'ro-client-1' },
          { input: 4, rollout_id: 'ro-client-2' },
        ]);
        expect(many.map((r) => r.rollout_id)).toEqual(['ro-client-1', 'ro-client-2']);
        expect((await store.querySpans('ro-client-1')).total).toBe(1);
        expect((await store.dequeueRollout())?.rollout_id).toBe('ro-client-2');
        expect(await store.dequeueRollout()).toBeNull();
        expect((await store.queryRollouts()).total).toBe(2);
      });

      it('raises not_found naming the id for unknown rollouts and attempts', async () => {
        await expectStoreError(store.updateRollout('ro-missing', { status: 'failed' }), 'not_found', {
          message: /ro-missing/,
        });
        await expectStoreError(store.startAttempt('ro-missing'), 'not_found', { message: /ro-missing/ });
        await expectStoreError(store.updateAttempt('ro-missing', 'latest', { status: 'failed' }), 'not_found', {
          message: /ro-missing/,
        });
        await expectStoreError(store.addSpan(makeSpan('ro-missing', 'at-1')), 'not_found', { message: /ro-missing/ });
        const rollout = await started();
        await expectStoreError(store.updateAttempt(rollout.rollout_id, 'at-nope', { status: 'failed' }), 'not_found', {
          message: /at-nope/,
        });
        await expectStoreError(store.addSpan(makeSpan(rollout.rollout_id, 'at-nope')), 'not_found', {
          message: /at-nope/,
        });
        expect(await store.getRolloutById('ro-missing')).toBeNull();
        expect(await store.getLatestAttempt('ro-missing')).toBeNull();
      });

      it('rejects invalid enqueue requests without enqueuing anything', async () => {
        await expectStoreError(store.enqueueRollout({ input: 1, mode: 'bogus' as 'train' }), 'invalid_argument', {
          param: 'mode',
        });
        await expectStoreError(
          store.enqueueRollout({ input: 1, config: cfg({ max_attempts: 0 }) }),
          'invalid_argument',
        );
        await expectStoreError(
          store.enqueueManyRollouts([
            { input: 1 },
            { input: 2, config: cfg({ retry_condition: ['nope' as 'failed'] }) },
          ]),
          'invalid_argument',
        );
        expect((await store.queryRollouts()).total).toBe(0);
      });
    });

    describe('attempt propagation (docs/architecture.md)', () => {
      it('a succeeded latest attempt finishes the rollout with end times', async () => {
        const rollout = await started();
        const attempt = await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'succeeded' });
        expect(attempt.status).toBe('succeeded');
        expect(attempt.end_time).not.toBeNull();
        const after = await store.getRolloutById(rollout.rollout_id);
        expect(after?.status).toBe('succeeded');
        expect(after?.end_time).not.toBeNull();
      });

      it('retries through the queue per retry_condition and max_attempts', async () => {
        await store.enqueueRollout({ input: 1, config: cfg({ max_attempts: 2, retry_condition: ['failed'] }) });
        const first = await store.dequeueRollout();
        const rid = first?.rollout_id ?? '';
        await store.updateAttempt(rid, first?.attempt.attempt_id ?? '', { status: 'failed' });
        expect((await store.getRolloutById(rid))?.status).toBe('requeuing');
        const second = await store.dequeueRollout();
        expect(second?.attempt.sequence_id).toBe(2);
        await store.updateAttempt(rid, 'latest', { status: 'failed' });
        const final = await store.getRolloutById(rid);
        expect(final?.status).toBe('failed');
        expect(await store.dequeueRollout()).toBeNull();
      });

      it('only the latest attempt propagates (docs/failure-classes.md#34)', async () => {
        const rollout = await started({ unresponsive_seconds: 1000 });
        const rid = rollout.rollout_id;
        const a1 = rollout.attempt.attempt_id;
        await store.updateAttempt(rid, a1, { status: 'unresponsive' });
        const a2 = (await store.startAttempt(rid)).attempt.attempt_id;
        const a3 = (await store.startAttempt(rid)).attempt.attempt_id;
        expect(new Set([a1, a2, a3]).size).toBe(3);
        await store.updateAttempt(rid, a2, { status: 'succeeded' });
        expect((await store.getRolloutById(rid))?.status).toBe('preparing');
        // a span from the superseded unresponsive attempt revives it but leaves the rollout alone
        await store.addSpan(makeSpan(rid, a1));
        const attempts = await store.queryAttempts(rid);
        expect(attempts.items.map((a) => a.status)).toEqual(['running', 'succeeded', 'preparing']);
        expect((await store.getRolloutById(rid))?.status).toBe('preparing');
        expect((await store.getLatestAttempt(rid))?.attempt_id).toBe(a3);
      });

      it('a span is a heartbeat: preparing attempt and rollout become running', async () => {
        const rollout = await started();
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        const after = await store.getRolloutById(rollout.rollout_id);
        expect(after?.status).toBe('running');
        expect(attemptOf(after)?.status).toBe('running');
        expect(attemptOf(after)?.last_heartbeat_time).not.toBeNull();
      });

      it('a span on the latest attempt promotes a queuing rollout (v0.3 misspelling fixed, docs/failure-classes.md#32)', async () => {
        const rollout = await started();
        await store.updateRollout(rollout.rollout_id, { status: 'queuing' });
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('running');
        // its queue entry is stale now and is skipped
        expect(await store.dequeueRollout()).toBeNull();
      });

      it('a requeued attempt that recovers before the retry decides the rollout', async () => {
        const rollout = await started({ max_attempts: 3, retry_condition: ['unresponsive'] });
        const rid = rollout.rollout_id;
        await store.updateAttempt(rid, 'latest', { status: 'unresponsive' });
        expect((await store.getRolloutById(rid))?.status).toBe('requeuing');
        await store.addSpan(makeSpan(rid, rollout.attempt.attempt_id));
        expect((await store.getRolloutById(rid))?.status).toBe('running');
        expect(await store.dequeueRollout()).toBeNull();
        await store.updateAttempt(rid, 'latest', { status: 'succeeded' });
        expect((await store.getRolloutById(rid))?.status).toBe('succeeded');
        expect((await store.queryAttempts(rid)).total).toBe(1);
      });
    });

    describe('watchdog (docs/architecture.md, docs/failure-classes.md (35-36))', () => {
      it('times out an attempt and requeues the rollout per retry_condition', async () => {
        const rollout = await started({ timeout_seconds: 0.1, max_attempts: 2, retry_condition: ['timeout'] });
        await sleep(300);
        await eventually(async () => (await store.getRolloutById(rollout.rollout_id))?.status === 'requeuing');
        expect((await store.getLatestAttempt(rollout.rollout_id))?.status).toBe('timeout');
        // a late span records a heartbeat but never clears timeout, and does not revive the rollout
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        const attempt = await store.getLatestAttempt(rollout.rollout_id);
        expect(attempt?.status).toBe('timeout');
        expect(attempt?.last_heartbeat_time).not.toBeNull();
        expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('requeuing');
        const retry = await store.dequeueRollout();
        expect(retry?.attempt.sequence_id).toBe(2);
      });

      it('marks an attempt unresponsive; without a retry on it the rollout fails', async () => {
        const rollout = await started({ unresponsive_seconds: 0.1, max_attempts: 2, retry_condition: ['timeout'] });
        await sleep(300);
        await eventually(async () => (await store.getRolloutById(rollout.rollout_id))?.status === 'failed');
        expect((await store.getLatestAttempt(rollout.rollout_id))?.status).toBe('unresponsive');
      });

      it('detects a timeout with no store traffic and releases waiters (timer-driven)', async () => {
        const rollout = await started({ timeout_seconds: 0.2 });
        const t0 = Date.now();
        const finished = await store.waitForRollouts([rollout.rollout_id], { timeout: 5 });
        expect(Date.now() - t0).toBeLessThan(3_000);
        expect(finished.map((r) => r.status)).toEqual(['failed']);
        expect((await store.getLatestAttempt(rollout.rollout_id))?.status).toBe('timeout');
      });

      it('measures timeout from the attempt start, not the rollout start', async () => {
        const queued = await store.enqueueRollout({ input: 1, config: cfg({ timeout_seconds: 0.25 }) });
        await sleep(350);
        const claimed = await store.dequeueRollout();
        expect(claimed?.rollout_id).toBe(queued.rollout_id);
        await sleep(2 * WATCHDOG_MS);
        expect((await store.getLatestAttempt(queued.rollout_id))?.status).toBe('preparing');
      });
    });

    describe('spans and sequence ids (docs/architecture.md, docs/failure-classes.md (26-28))', () => {
      it('follows the pitfall-28 counter sequence', async () => {
        const rollout = await started();
        const rid = rollout.rollout_id;
        const aid = rollout.attempt.attempt_id;
        expect(await store.nextSequenceId(rid, aid)).toBe(1);
        expect((await store.addSpan(makeSpan(rid, aid)))?.sequence_id).toBe(2);
        expect(await store.nextSequenceId(rid, aid)).toBe(3);
        expect((await store.addSpan(makeSpan(rid, aid)))?.sequence_id).toBe(4);
        expect(await store.nextSequenceId(rid, 'at-unknown')).toBe(5);
        expect((await store.addSpan(makeSpan(rid, aid, { sequence_id: 100 })))?.sequence_id).toBe(100);
        expect(await store.nextSequenceId(rid, aid)).toBe(101);
        // an explicit id below the counter is kept and does not move it
        expect((await store.addSpan(makeSpan(rid, aid, { sequence_id: 7 })))?.sequence_id).toBe(7);
        expect(await store.nextSequenceId(rid)).toBe(102);
      });

      it('allocates bulk ids per rollout: [(A,a1),(B,b1),(A,a2),(A,a1)] -> [1,1,2,3]', async () => {
        const ids = await store.nextSequenceIds([
          ['ro-A', 'a1'],
          ['ro-B', 'b1'],
          ['ro-A', 'a2'],
          ['ro-A', 'a1'],
        ]);
        expect(ids).toEqual([1, 1, 2, 3]);
        expect(await store.nextSequenceId('ro-A', 'a1')).toBe(4);
        expect(await store.nextSequenceId('ro-B', 'b9')).toBe(2);
      });

      it('gives 100 concurrent nextSequenceId calls exactly 1..100', async () => {
        const ids = await Promise.all(Array.from({ length: 100 }, () => store.nextSequenceId('ro-concurrent', 'at-x')));
        expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      });

      it('gives 20 concurrent span adds sequence ids exactly {1..20}', async () => {
        const rollout = await started();
        const spans = await Promise.all(
          Array.from({ length: 20 }, () => store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id))),
        );
        expect(spans.map((s) => s?.sequence_id).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        expect((await store.querySpans(rollout.rollout_id)).total).toBe(20);
      });

      it('returns null for a duplicate (rollout, attempt, span_id) and addManySpans returns only inserted', async () => {
        const rollout = await started();
        const rid = rollout.rollout_id;
        const aid = rollout.attempt.attempt_id;
        const span = makeSpan(rid, aid);
        expect(await store.addSpan(span)).not.toBeNull();
        expect(await store.addSpan(span)).toBeNull();
        const fresh = makeSpan(rid, aid);
        const inserted = await store.addManySpans([span, fresh, fresh, makeSpan(rid, aid)]);
        expect(inserted.map((s) => s.span_id)).toEqual([fresh.span_id, expect.any(String)]);
        expect(inserted[1]?.span_id).not.toBe(fresh.span_id);
        expect((await store.querySpans(rid)).total).toBe(3);
        // the same span_id under another attempt is not a duplicate
        const other = await store.startAttempt(rid);
        expect(await store.addSpan({ ...span, attempt_id: other.attempt.attempt_id })).not.toBeNull();
      });

      it('normalises nanosecond timestamps to seconds and preserves attributes and extra fields', async () => {
        const rollout = await started();
        const stored = await store.addSpan(
          makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, {
            start_time: 1_700_000_000_500_000_000,
            end_time: 1_700_000_002_000_000_000,
            attributes: {
              prompt_token_ids: [1, 2, 3, 70000, 0],
              response_token_ids: [9, 8],
              'rollgate.choices.0.token_ids': [5, 6, 7],
              logprobs: [-0.5, -1.25],
              flags: [true, false],
              tags: ['a', 'b'],
              count: 3,
              ratio: 0.5,
              ok: true,
              text: 'hi',
            },
            extra_field: { kept: true },
          }),
        );
        expect(stored?.start_time).toBeCloseTo(1_700_000_000.5, 3);
        const [read] = (await store.querySpans(rollout.rollout_id)).items;
        expect(read?.start_time).toBeCloseTo(1_700_000_000.5, 3);
        expect(read?.end_time).toBeCloseTo(1_700_000_002, 3);
        expect(read?.attributes).toEqual({
          prompt_token_ids: [1, 2, 3, 70000, 0],
          response_token_ids: [9, 8],
          'rollgate.choices.0.token_ids': [5, 6, 7],
          logprobs: [-0.5, -1.25],
          flags: [true, false],
          tags: ['a', 'b'],
          count: 3,
          ratio: 0.5,
          ok: true,
          text: 'hi',
        });
        expect((read as unknown as Record<string, unknown>).extra_field).toEqual({ kept: true });
      });

      it('sorts sequence ids numerically (2, 10, 100) both ways', async () => {
        const rollout = await started();
        for (const seq of [100, 2, 10]) {
          await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, { sequence_id: seq }));
        }
        const asc = await store.querySpans(rollout.rollout_id);
        expect(asc.items.map((s) => s.sequence_id)).toEqual([2, 10, 100]);
        const desc = await store.querySpans(rollout.rollout_id, { sort_order: 'desc' });
        expect(desc.items.map((s) => s.sequence_id)).toEqual([100, 10, 2]);
      });

      it('filters spans by attempt (id, latest, all) and fields with and/or logic', async () => {
        const rollout = await started();
        const rid = rollout.rollout_id;
        const a1 = rollout.attempt.attempt_id;
        await store.addSpan(makeSpan(rid, a1, { name: 'chat alpha' }));
        await store.addSpan(makeSpan(rid, a1, { name: 'reward' }));
        const a2 = (await store.startAttempt(rid)).attempt.attempt_id;
        const last = (await store.addSpan(makeSpan(rid, a2, { name: 'chat beta', parent_id: 'p1' }))) as Span;
        expect((await store.querySpans(rid)).total).toBe(3);
        expect((await store.querySpans(rid, { attempt_id: a1 })).total).toBe(2);
        expect((await store.querySpans(rid, { attempt_id: 'latest' })).items.map((s) => s.name)).toEqual(['chat beta']);
        expect((await store.querySpans(rid, { name_contains: 'chat' })).total).toBe(2);
        expect((await store.querySpans(rid, { name: 'reward' })).total).toBe(1);
        expect((await store.querySpans(rid, { parent_id_contains: 'p' })).total).toBe(1);
        expect((await store.querySpans(rid, { span_id: last.span_id, trace_id: last.trace_id })).total).toBe(1);
        expect((await store.querySpans(rid, { span_id: last.span_id, name: 'reward' })).total).toBe(0);
        expect((await store.querySpans(rid, { span_id: last.span_id, name: 'reward', filter_logic: 'or' })).total).toBe(
          2,
        );
        // the attempt filter is always AND-ed
        expect(
          (
            await store.querySpans(rid, {
              attempt_id: a1,
              name: 'chat beta',
              name_contains: 'reward',
              filter_logic: 'or',
            })
          ).items.map((s) => s.name),
        ).toEqual(['reward']);
        expect((await store.querySpans(rid, { trace_id_contains: last.trace_id.slice(4, 12) })).total).toBe(1);
        expect((await store.querySpans('ro-unknown')).total).toBe(0);
        const queued = await store.enqueueRollout({ input: 1 });
        expect((await store.querySpans(queued.rollout_id, { attempt_id: 'latest' })).items).toEqual([]);
        const page = await store.querySpans(rid, { limit: 2, offset: 1 });
        expect(page).toMatchObject({ total: 3, limit: 2, offset: 1 });
        expect(page.items).toHaveLength(2);
      });
    });

    describe('waits (docs/failure-classes.md#40)', () => {
      it('timeout 0 returns the finished subset immediately; unknown ids are omitted', async () => {
        const done = await started();
        const pending = await started();
        await store.updateRollout(done.rollout_id, { status: 'succeeded' });
        const t0 = Date.now();
        const result = await store.waitForRollouts([done.rollout_id, pending.rollout_id, 'ro-unknown'], { timeout: 0 });
        expect(Date.now() - t0).toBeLessThan(500);
        expect(result.map((r) => r.rollout_id)).toEqual([done.rollout_id]);
        expect(result[0]?.status).toBe('succeeded');
      });

      it('returns at once when every rollout already finished before waiting', async () => {
        const a = await started();
        await store.updateAttempt(a.rollout_id, 'latest', { status: 'failed' });
        const t0 = Date.now();
        const result = await store.waitForRollouts([a.rollout_id], { timeout: 10 });
        expect(Date.now() - t0).toBeLessThan(500);
        expect(result.map((r) => r.status)).toEqual(['failed']);
      });

      it('releases concurrent waiters within 50 ms of the terminal transition', async () => {
        const a = await started();
        const b = await started();
        const ids = [a.rollout_id, b.rollout_id];
        let releasedAt = 0;
        const waits = [1, 2, 3].map(() =>
          store.waitForRollouts(ids, { timeout: 20 }).then((r) => {
            releasedAt = Math.max(releasedAt, Date.now());
            return r;
          }),
        );
        const onlyA = store.waitForRollouts([a.rollout_id], { timeout: 20 });
        await sleep(30);
        await store.updateRollout(a.rollout_id, { status: 'cancelled' });
        expect((await onlyA).map((r) => r.rollout_id)).toEqual([a.rollout_id]);
        await sleep(30);
        expect(releasedAt).toBe(0);
        await store.updateAttempt(b.rollout_id, 'latest', { status: 'succeeded' });
        // Measured from the acknowledged transition, so a loaded machine's slow commit does not count.
        const finishedAt = Date.now();
        const results = await Promise.all(waits);
        expect(releasedAt - finishedAt).toBeLessThan(50);
        for (const r of results) expect(new Set(r.map((x) => x.rollout_id))).toEqual(new Set(ids));
      });

      it('returns the finished subset when the timeout expires', async () => {
        const a = await started();
        const b = await started();
        await store.updateRollout(a.rollout_id, { status: 'succeeded' });
        const result = await store.waitForRollouts([a.rollout_id, b.rollout_id], { timeout: 0.1 });
        expect(result.map((r) => r.rollout_id)).toEqual([a.rollout_id]);
      });

      it('a null timeout waits until the signal aborts', async () => {
        const a = await started();
        const controller = new AbortController();
        const wait = store.waitForRollouts([a.rollout_id], { timeout: null, signal: controller.signal });
        let settled = false;
        wait.then(
          () => {
            settled = true;
          },
          () => {
            settled = true;
          },
        );
        await sleep(100);
        expect(settled).toBe(false);
        controller.abort(new Error('caller gave up'));
        await expect(wait).rejects.toThrow('caller gave up');
      });
    });

    describe('long-poll dequeue (wait_ms)', () => {
      it('answers at once when there is work, and with [] when the wait runs out', async () => {
        const queued = await store.enqueueRollout({ input: 'now' });
        const started = Date.now();
        expect((await store.dequeueRollout({ wait_ms: 5_000 }))?.rollout_id).toBe(queued.rollout_id);
        expect(Date.now() - started).toBeLessThan(1_000);
        const waitedFrom = Date.now();
        expect(await store.dequeueManyRollouts({ limit: 2, wait_ms: 150 })).toEqual([]);
        expect(Date.now() - waitedFrom).toBeGreaterThanOrEqual(100);
      });

      it('wakes a waiting dequeue when a rollout is enqueued, and exactly one of two waiters claims it', async () => {
        const first = store.dequeueRollout({ worker_id: 'w1', wait_ms: 1_200 });
        const second = store.dequeueRollout({ worker_id: 'w2', wait_ms: 400 });
        await sleep(50);
        const enqueuedAt = Date.now();
        const rollout = await store.enqueueRollout({ input: 'later' });
        const winner = await Promise.race([first, second]);
        // Woken by the enqueue itself, not a poll: well under the waits, even on a loaded machine.
        expect(Date.now() - enqueuedAt).toBeLessThan(1_000);
        expect(winner?.rollout_id).toBe(rollout.rollout_id);
        const claims = (await Promise.all([first, second])).filter((r) => r !== null);
        expect(claims.map((r) => r?.rollout_id)).toEqual([rollout.rollout_id]);
        expect(attemptOf(claims[0] ?? null)?.sequence_id).toBe(1);
      });

      it('wakes on a requeue (a retried attempt) too', async () => {
        await store.enqueueRollout({
          input: 'retry me',
          config: cfg({ max_attempts: 2, retry_condition: ['failed'] }),
        });
        const claimed = await store.dequeueRollout();
        const waiting = store.dequeueRollout({ wait_ms: 3_000 });
        await sleep(50);
        const failedAt = Date.now();
        await store.updateAttempt(claimed?.rollout_id as string, 'latest', { status: 'failed' });
        const retry = await waiting;
        expect(Date.now() - failedAt).toBeLessThan(1_000);
        expect(retry?.rollout_id).toBe(claimed?.rollout_id);
        expect(attemptOf(retry)?.sequence_id).toBe(2);
      });

      it('claims nothing once the caller aborts, and the rollout stays queued for the next one', async () => {
        const controller = new AbortController();
        const waiting = store.dequeueRollout({ wait_ms: 3_000, signal: controller.signal });
        await sleep(50);
        controller.abort();
        expect(await waiting).toBeNull();
        const rollout = await store.enqueueRollout({ input: 'after abort' });
        expect((await store.dequeueRollout())?.rollout_id).toBe(rollout.rollout_id);
      });

      it('refuses a negative or non-finite wait_ms', async () => {
        await expectStoreError(store.dequeueRollout({ wait_ms: -1 }), 'invalid_argument', { param: 'wait_ms' });
      });
    });

    describe('updates: UNSET vs null (docs/failure-classes.md#37)', () => {
      it('an absent key is untouched, an explicit null clears', async () => {
        const rollout = await store.enqueueRollout({
          input: { a: 1 },
          mode: 'train',
          resources_id: 'rs-x',
          metadata: { tag: 'keep' },
        });
        const unchanged = await store.updateRollout(rollout.rollout_id, {});
        expect(unchanged).toEqual(rollout);
        const cleared = await store.updateRollout(rollout.rollout_id, { mode: null, resources_id: null });
        expect(cleared).toMatchObject({ mode: null, resources_id: null, metadata: { tag: 'keep' }, input: { a: 1 } });
        const meta = await store.updateRollout(rollout.rollout_id, { metadata: null, input: 'new' });
        expect(meta).toMatchObject({ metadata: null, input: 'new', status: 'queuing' });
        const conf = await store.updateRollout(rollout.rollout_id, { config: { max_attempts: 3 } });
        expect(conf.config).toEqual({
          timeout_seconds: null,
          unresponsive_seconds: null,
          max_attempts: 3,
          retry_condition: [],
        });
        await expectStoreError(store.updateRollout(rollout.rollout_id, { config: null as never }), 'invalid_argument', {
          param: 'config',
        });
        await expectStoreError(store.updateRollout(rollout.rollout_id, { status: null as never }), 'invalid_argument', {
          param: 'status',
        });
        expect((await store.getRolloutById(rollout.rollout_id))?.config.max_attempts).toBe(3);
      });

      it('attempt updates follow the same rule', async () => {
        const rollout = await started(undefined, 'w-1');
        expect(rollout.attempt.worker_id).toBe('w-1');
        const same = await store.updateAttempt(rollout.rollout_id, 'latest', {});
        expect(same).toEqual(rollout.attempt);
        const meta = await store.updateAttempt(rollout.rollout_id, 'latest', { metadata: { k: 1 } });
        expect(meta).toMatchObject({ metadata: { k: 1 }, worker_id: 'w-1' });
        if (factory.restApi) {
          await expectStoreError(
            store.updateAttempt(rollout.rollout_id, rollout.attempt.attempt_id, { worker_id: null }),
            'invalid_argument',
            { param: 'worker_id' },
          );
        } else {
          const cleared = await store.updateAttempt(rollout.rollout_id, rollout.attempt.attempt_id, {
            worker_id: null,
          });
          expect(cleared).toMatchObject({ metadata: { k: 1 }, worker_id: null, status: 'preparing' });
        }
        const beat = await store.updateAttempt(rollout.rollout_id, 'latest', { last_heartbeat_time: 123 });
        expect(beat.last_heartbeat_time).toBe(123);
      });

      it('entering a terminal status sets end_time; a new attempt (the retry) clears it', async () => {
        const rollout = await started();
        const done = await store.updateRollout(rollout.rollout_id, { status: 'failed' });
        expect(done.end_time).not.toBeNull();
        const retried = await store.startAttempt(rollout.rollout_id);
        expect(retried).toMatchObject({ status: 'preparing', end_time: null });
        expect(retried.attempt.sequence_id).toBe(2);
      });
    });

    describe('status transitions (docs/store.md "Status transitions")', () => {
      const FINISHED = ['succeeded', 'failed', 'cancelled'] as const;
      const ALL = ['queuing', 'requeuing', 'preparing', 'running', 'succeeded', 'failed', 'cancelled'] as const;

      for (const from of FINISHED) {
        it(`a ${from} rollout stays ${from}: every other status write is a conflict and changes nothing`, async () => {
          const rollout = await started();
          const rid = rollout.rollout_id;
          const done = await store.updateRollout(rid, { status: from });
          for (const to of ALL) {
            if (to === from) continue;
            await expectStoreError(store.updateRollout(rid, { status: to }), 'conflict', {
              param: 'status',
              message: new RegExp(`${from}.*${to}`),
            });
          }
          // Its latest attempt cannot bring it back either.
          for (const status of ['running', 'preparing'] as const) {
            await expectStoreError(store.updateAttempt(rid, 'latest', { status }), 'conflict', { param: 'status' });
          }
          const after = await store.getRolloutById(rid);
          expect(after).toMatchObject({ status: from, end_time: done.end_time });
          expect(attemptOf(after)?.status).toBe(rollout.attempt.status);
          expect(await store.dequeueRollout()).toBeNull();
          // What an algorithm cancelling stragglers recognises as "it finished meanwhile".
          expect(
            isFinishedRefusal(await store.updateRollout(rid, { status: 'cancelled' }).catch((e: unknown) => e)),
          ).toBe(from !== 'cancelled');
          // Writing the status it has is allowed (a repeated write, or a reason stated late).
          expect((await store.updateRollout(rid, { status: from })).end_time).toBe(done.end_time);
        });
      }

      it('an unfinished rollout may be written to any status', async () => {
        for (const from of ['queuing', 'preparing', 'running'] as const) {
          for (const to of ALL) {
            const rollout = await started();
            if (from !== 'preparing') await store.updateRollout(rollout.rollout_id, { status: from });
            expect((await store.updateRollout(rollout.rollout_id, { status: to })).status).toBe(to);
          }
        }
      });

      it('the retries keep working: retry_condition requeues, start_attempt re-runs a finished rollout', async () => {
        const rollout = await started({ max_attempts: 2, retry_condition: ['failed'] });
        const rid = rollout.rollout_id;
        await store.updateAttempt(rid, 'latest', { status: 'failed' });
        expect((await store.getRolloutById(rid))?.status).toBe('requeuing');
        expect((await store.dequeueRollout())?.attempt.sequence_id).toBe(2);
        await store.updateAttempt(rid, 'latest', { status: 'failed' });
        expect((await store.getRolloutById(rid))?.status).toBe('failed');
        const rerun = await store.startAttempt(rid);
        expect(rerun).toMatchObject({ status: 'preparing', end_time: null });
        await store.updateAttempt(rid, 'latest', { status: 'succeeded' });
        expect((await store.getRolloutById(rid))?.status).toBe('succeeded');
      });

      it('the latest attempt may still settle a finished outcome (a timed-out attempt that succeeds late)', async () => {
        const rollout = await started();
        const rid = rollout.rollout_id;
        await store.updateAttempt(rid, 'latest', { status: 'timeout' });
        expect((await store.getRolloutById(rid))?.status).toBe('failed');
        await store.updateAttempt(rid, 'latest', { status: 'succeeded' });
        expect((await store.getRolloutById(rid))?.status).toBe('succeeded');
      });
    });

    describe('query rules (docs/architecture.md)', () => {
      it('filters rollouts by status_in, rollout_id_in, rollout_id_contains with and/or', async () => {
        const a = await store.enqueueRollout({ input: 1, rollout_id: 'ro-alpha' });
        const b = await store.enqueueRollout({ input: 2, rollout_id: 'ro-beta' });
        const c = await started();
        const ids = (r: { items: Array<{ rollout_id: string }> }) => r.items.map((x) => x.rollout_id);
        expect(ids(await store.queryRollouts())).toEqual([a.rollout_id, b.rollout_id, c.rollout_id]);
        expect(ids(await store.queryRollouts({ status_in: ['preparing'] }))).toEqual([c.rollout_id]);
        expect(ids(await store.queryRollouts({ rollout_id_in: ['ro-beta', 'ro-zzz'] }))).toEqual(['ro-beta']);
        expect(ids(await store.queryRollouts({ rollout_id_contains: 'alp' }))).toEqual(['ro-alpha']);
        expect(ids(await store.queryRollouts({ status_in: ['queuing'], rollout_id_contains: 'bet' }))).toEqual([
          'ro-beta',
        ]);
        expect(
          ids(await store.queryRollouts({ status_in: ['preparing'], rollout_id_contains: 'bet', filter_logic: 'or' })),
        ).toEqual(['ro-beta', c.rollout_id]);
        const withAttempt = (await store.queryRollouts({ status_in: ['preparing'] })).items[0];
        expect(attemptOf(withAttempt ?? null)?.sequence_id).toBe(1);
        const queued = (await store.queryRollouts({ rollout_id_in: ['ro-alpha'] })).items[0];
        expect(queued !== undefined && 'attempt' in queued).toBe(false);
      });

      it('paginates with limit/offset/total and -1 for no limit', async () => {
        await store.enqueueManyRollouts(Array.from({ length: 5 }, (_, i) => ({ input: i })));
        const page = await store.queryRollouts({ limit: 2, offset: 1 });
        expect(page).toMatchObject({ limit: 2, offset: 1, total: 5 });
        expect(page.items.map((r) => r.input)).toEqual([1, 2]);
        const all = await store.queryRollouts({ limit: -1 });
        expect(all).toMatchObject({ limit: -1, offset: 0, total: 5 });
        expect(all.items).toHaveLength(5);
        expect((await store.queryRollouts({ offset: 10 })).items).toEqual([]);
        const desc = await store.queryRollouts({ sort_order: 'desc' });
        expect(desc.items.map((r) => r.input)).toEqual([4, 3, 2, 1, 0]);
      });

      it('rejects invalid paging and sorting naming the parameter', async () => {
        await expectStoreError(store.queryRollouts({ limit: 0 }), 'invalid_argument', { param: 'limit' });
        await expectStoreError(store.queryRollouts({ limit: -2 }), 'invalid_argument', { param: 'limit' });
        await expectStoreError(store.queryRollouts({ offset: -1 }), 'invalid_argument', { param: 'offset' });
        await expectStoreError(store.queryRollouts({ sort_by: 'nope' }), 'invalid_argument', {
          param: 'sort_by',
          message: /^Invalid sort_by: nope, allowed fields are: .*rollout_id/,
        });
        await expectStoreError(store.queryRollouts({ sort_order: 'up' as 'asc' }), 'invalid_argument', {
          param: 'sort_order',
        });
        await expectStoreError(store.queryRollouts({ filter_logic: 'xor' as 'and' }), 'invalid_argument', {
          param: 'filter_logic',
        });
        await expectStoreError(store.querySpans('ro-x', { sort_by: 'bogus' }), 'invalid_argument', {
          param: 'sort_by',
        });
        await expectStoreError(store.querySpans('ro-x', { limit: 0 }), 'invalid_argument', { param: 'limit' });
        await expectStoreError(store.queryAttempts('ro-x', { offset: -5 }), 'invalid_argument', { param: 'offset' });
        await expectStoreError(store.queryWorkers({ sort_by: 'x' }), 'invalid_argument', { param: 'sort_by' });
        await expectStoreError(store.queryResources({ limit: -7 }), 'invalid_argument', { param: 'limit' });
      });

      it('sorts nulls: *_time nulls as +infinity, other nulls as the empty value; stable', async () => {
        const a = await started();
        const b = await started();
        const c = await started();
        await store.updateRollout(b.rollout_id, { status: 'succeeded' });
        await store.updateRollout(a.rollout_id, { mode: 'val' });
        const byEnd = await store.queryRollouts({ sort_by: 'end_time' });
        expect(byEnd.items.map((r) => r.rollout_id)).toEqual([b.rollout_id, a.rollout_id, c.rollout_id]);
        const byEndDesc = await store.queryRollouts({ sort_by: 'end_time', sort_order: 'desc' });
        expect(byEndDesc.items.map((r) => r.rollout_id)).toEqual([a.rollout_id, c.rollout_id, b.rollout_id]);
        const byMode = await store.queryRollouts({ sort_by: 'mode' });
        expect(byMode.items.map((r) => r.rollout_id)).toEqual([b.rollout_id, c.rollout_id, a.rollout_id]);
        const byStatus = await store.queryRollouts({ sort_by: 'status', sort_order: 'desc' });
        expect(byStatus.items.map((r) => r.status)).toEqual(['succeeded', 'preparing', 'preparing']);
      });

      it('sorts attempts by sequence_id by default', async () => {
        const rollout = await started();
        for (let i = 0; i < 10; i++) await store.startAttempt(rollout.rollout_id);
        const attempts = await store.queryAttempts(rollout.rollout_id);
        expect(attempts.items.map((a) => a.sequence_id)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
        const desc = await store.queryAttempts(rollout.rollout_id, { sort_order: 'desc', limit: 3 });
        expect(desc.items.map((a) => a.sequence_id)).toEqual([11, 10, 9]);
        expect((await store.queryAttempts('ro-unknown')).total).toBe(0);
        expect((await store.getLatestAttempt(rollout.rollout_id))?.sequence_id).toBe(11);
      });
    });

    describe('workers (docs/architecture.md)', () => {
      it('an empty dequeue makes the worker idle; a claim makes it busy with current ids', async () => {
        expect(await store.dequeueRollout({ worker_id: 'w-1' })).toBeNull();
        const idle = await store.getWorkerById('w-1');
        expect(idle).toMatchObject({ status: 'idle', current_rollout_id: null });
        expect(idle?.last_idle_time).not.toBeNull();
        expect(idle?.last_dequeue_time).not.toBeNull();
        const queued = await store.enqueueRollout({ input: 1 });
        const claimed = await store.dequeueRollout({ worker_id: 'w-1' });
        expect(claimed?.attempt.worker_id).toBe('w-1');
        const busy = await store.getWorkerById('w-1');
        expect(busy).toMatchObject({
          status: 'busy',
          current_rollout_id: queued.rollout_id,
          current_attempt_id: claimed?.attempt.attempt_id,
        });
        expect(busy?.last_busy_time).not.toBeNull();
        await store.updateAttempt(queued.rollout_id, 'latest', { status: 'succeeded' });
        expect(await store.getWorkerById('w-1')).toMatchObject({
          status: 'idle',
          current_rollout_id: null,
          current_attempt_id: null,
        });
      });

      it('timeout/unresponsive make the worker unknown; other statuses busy', async () => {
        // With a retry left the rollout waits (requeuing), so the attempt may still report itself running.
        const rollout = await started({ max_attempts: 2, retry_condition: ['unresponsive'] });
        await store.updateAttempt(rollout.rollout_id, 'latest', { worker_id: 'w-2' });
        expect((await store.getWorkerById('w-2'))?.status).toBe('busy');
        await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'unresponsive' });
        expect(await store.getWorkerById('w-2')).toMatchObject({ status: 'unknown', current_rollout_id: null });
        await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'running' });
        expect(await store.getWorkerById('w-2')).toMatchObject({
          status: 'busy',
          current_rollout_id: rollout.rollout_id,
        });
      });

      it('dequeueMany associates the worker with the last claim', async () => {
        await store.enqueueManyRollouts([{ input: 1 }, { input: 2 }]);
        const claimed = await store.dequeueManyRollouts({ limit: 2, worker_id: 'w-3' });
        expect((await store.getWorkerById('w-3'))?.current_rollout_id).toBe(claimed[1]?.rollout_id);
      });

      it('updateWorker is a heartbeat: creates unknown workers, stores stats, never changes status', async () => {
        const created = await store.updateWorker('w-4', { heartbeat_stats: { gpu: 0.5 } });
        expect(created).toMatchObject({ worker_id: 'w-4', status: 'unknown', heartbeat_stats: { gpu: 0.5 } });
        expect(created.last_heartbeat_time).not.toBeNull();
        await store.dequeueRollout({ worker_id: 'w-4' });
        const again = await store.updateWorker('w-4');
        expect(again).toMatchObject({ status: 'idle', heartbeat_stats: { gpu: 0.5 } });
        await expectStoreError(store.updateWorker('w-4', { heartbeat_stats: null as never }), 'invalid_argument', {
          param: 'heartbeat_stats',
        });
        expect(await store.getWorkerById('w-missing')).toBeNull();
        const idle = await store.queryWorkers({ status_in: ['idle'] });
        expect(idle.items.map((w) => w.worker_id)).toEqual(['w-4']);
        expect((await store.queryWorkers({ worker_id_contains: 'w-' })).total).toBe(1);
      });
    });

    describe('resources', () => {
      it('versions snapshots; latest is the most recently added or updated', async () => {
        const llm = { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' } as const;
        const a = await store.addResources({ main: llm });
        expect(a.resources_id).toMatch(/^rs-[0-9a-f]{12}$/);
        expect(a).toMatchObject({ version: 1, resources: { main: llm } });
        expect(a.create_time).toBe(a.update_time);
        const b = await store.addResources({ other: llm });
        expect((await store.getLatestResources())?.resources_id).toBe(b.resources_id);
        await sleep(5);
        const a2 = await store.updateResources(a.resources_id, { main: { ...llm, model: 'm2' } });
        expect(a2).toMatchObject({ resources_id: a.resources_id, version: 2, create_time: a.create_time });
        expect(a2.update_time).toBeGreaterThan(a.update_time);
        expect((await store.getLatestResources())?.resources_id).toBe(a.resources_id);
        const c = await store.updateResources('rs-custom', { main: llm });
        expect(c).toMatchObject({ resources_id: 'rs-custom', version: 1 });
        expect((await store.getLatestResources())?.resources_id).toBe('rs-custom');
        expect((await store.getResourcesById(a.resources_id))?.version).toBe(2);
        expect(await store.getResourcesById('rs-missing')).toBeNull();
        const all = await store.queryResources();
        expect(all.items.map((r) => r.resources_id)).toEqual([a.resources_id, b.resources_id, 'rs-custom']);
        expect((await store.queryResources({ resources_id_contains: 'custom' })).total).toBe(1);
        expect((await store.queryResources({ resources_id: b.resources_id })).items[0]?.version).toBe(1);
        expect((await store.queryResources({ sort_by: 'version', sort_order: 'desc' })).items[0]?.version).toBe(2);
      });
    });

    describe('statistics and capabilities', () => {
      it('counts rollouts, attempts, spans, resources and workers', async () => {
        const rollout = await started(undefined, 'w-1');
        await store.startAttempt(rollout.rollout_id);
        await store.enqueueRollout({ input: 1 });
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        await store.addResources({ main: { resource_type: 'llm', endpoint: 'http://x', model: 'm' } });
        const stats = await store.statistics();
        expect(stats).toMatchObject({
          total_rollouts: 2,
          total_attempts: 2,
          total_spans: 1,
          total_resources: 1,
          total_workers: 1,
        });
        expect(typeof stats.name).toBe('string');
        expect(stats.uptime).toBeGreaterThanOrEqual(0);
        expect(stats.total_span_bytes).toBeGreaterThanOrEqual(0);
        expect(typeof store.capabilities.async_safe).toBe('boolean');
      });

      it('close is idempotent', async () => {
        await store.close();
        await store.close();
        store = await factory.create({ watchdogIntervalMs: WATCHDOG_MS });
      });
    });

    describe('input limits (docs/input-limits.md)', () => {
      it('refuses values nested deeper than the limit, leaves nothing behind and keeps working', async () => {
        const rollout = await started();
        const aid = rollout.attempt.attempt_id;
        await expectStoreError(
          store.enqueueRollout({ rollout_id: 'ro-deep', input: nested(TOO_DEEP) }),
          'invalid_argument',
        );
        expect(await store.getRolloutById('ro-deep')).toBeNull();
        await expectStoreError(
          store.addSpan(makeSpan(rollout.rollout_id, aid, { span_id: 'deep', extra: nested(TOO_DEEP) })),
          'invalid_argument',
        );
        await expectStoreError(
          store.updateRollout(rollout.rollout_id, { metadata: { deep: nested(TOO_DEEP) } }),
          'invalid_argument',
        );
        await expectStoreError(
          store.updateWorker('w-deep', { heartbeat_stats: { deep: nested(TOO_DEEP) } }),
          'invalid_argument',
        );
        expect(await store.getWorkerById('w-deep')).toBeNull();
        expect((await store.querySpans(rollout.rollout_id)).total).toBe(0);
        expect((await store.getRolloutById(rollout.rollout_id))?.metadata).toEqual({});

        // The same ids are free for a request that fits, and a value well inside the limit is kept whole.
        const shallow = nested(MAX_JSON_DEPTH - 8);
        expect((await store.enqueueRollout({ rollout_id: 'ro-deep', input: shallow })).input).toEqual(shallow);
        const span = await store.addSpan(makeSpan(rollout.rollout_id, aid, { span_id: 'deep', extra: shallow }));
        expect((span as Record<string, unknown> | null)?.extra).toEqual(shallow);
        expect((await store.querySpans(rollout.rollout_id)).total).toBe(1);
        expect((await store.dequeueRollout())?.rollout_id).toBe('ro-deep');
      });
    });

    describe('failure reasons (rollgate: failed/cancelled rollouts say why)', () => {
      it('a new, running or succeeded rollout has none', async () => {
        const queued = await store.enqueueRollout({ input: 1 });
        expect(queued.failure_reason).toBeNull();
        const rollout = await started();
        expect(rollout.failure_reason).toBeNull();
        await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'succeeded' });
        expect((await store.getRolloutById(rollout.rollout_id))?.failure_reason).toBeNull();
      });

      it("carries an attempt's stated reason to the rollout it ends, and defaults to unknown", async () => {
        const a = await started();
        await store.updateAttempt(a.rollout_id, a.attempt.attempt_id, {
          status: 'failed',
          failure_reason: 'upstream_error',
        });
        const failed = await store.getRolloutById(a.rollout_id);
        expect(failed?.status).toBe('failed');
        expect(failed?.failure_reason).toBe('upstream_error');
        const b = await started();
        await store.updateAttempt(b.rollout_id, 'latest', { status: 'failed' });
        expect((await store.getRolloutById(b.rollout_id))?.failure_reason).toBe('unknown');
        // Readable through every read path, not only the point lookup.
        const page = await store.queryRollouts({ rollout_id_in: [a.rollout_id, b.rollout_id], sort_by: 'rollout_id' });
        expect(new Set(page.items.map((r) => r.failure_reason))).toEqual(new Set(['upstream_error', 'unknown']));
        const waited = await store.waitForRollouts([a.rollout_id], { timeout: 1 });
        expect(waited[0]?.failure_reason).toBe('upstream_error');
      });

      it('a cancel defaults to cancelled, a stated reason wins, and a later status clears it', async () => {
        const a = await started();
        const cancelled = await store.updateRollout(a.rollout_id, { status: 'cancelled' });
        expect(cancelled.failure_reason).toBe('cancelled');
        const b = await started();
        const timedOut = await store.updateRollout(b.rollout_id, { status: 'cancelled', failure_reason: 'timeout' });
        expect(timedOut.failure_reason).toBe('timeout');
        // Re-writing the same status without a reason keeps the recorded one.
        expect((await store.updateRollout(b.rollout_id, { status: 'cancelled' })).failure_reason).toBe('timeout');
        // A reason without a failing status records nothing.
        const c = await started();
        expect((await store.updateRollout(c.rollout_id, { failure_reason: 'timeout' })).failure_reason).toBeNull();
        // A manual re-run leaves the terminal status: the old reason no longer describes the rollout.
        const rerun = await store.startAttempt(b.rollout_id);
        expect(rerun.failure_reason).toBeNull();
        await store.updateAttempt(b.rollout_id, 'latest', { status: 'succeeded' });
        expect((await store.getRolloutById(b.rollout_id))?.failure_reason).toBeNull();
      });

      it('a retried failure leaves the requeued rollout without a reason; the final one keeps its own', async () => {
        const rollout = await started({ max_attempts: 2, retry_condition: ['failed'] });
        await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'failed', failure_reason: 'agent_crash' });
        const requeued = await store.getRolloutById(rollout.rollout_id);
        expect(requeued?.status).toBe('requeuing');
        expect(requeued?.failure_reason).toBeNull();
        await store.dequeueRollout();
        await store.updateAttempt(rollout.rollout_id, 'latest', { status: 'failed', failure_reason: 'runner_kill' });
        expect((await store.getRolloutById(rollout.rollout_id))?.failure_reason).toBe('runner_kill');
      });

      it('the watchdog records timeout and unresponsive', async () => {
        const slow = await started({ timeout_seconds: 0.1 });
        const silent = await started({ unresponsive_seconds: 0.1 });
        await store.waitForRollouts([slow.rollout_id, silent.rollout_id], { timeout: 5 });
        expect((await store.getRolloutById(slow.rollout_id))?.failure_reason).toBe('timeout');
        expect((await store.getRolloutById(silent.rollout_id))?.failure_reason).toBe('unresponsive');
      });

      it('refuses a reason it does not know', async () => {
        const rollout = await started();
        const bogus = 'gremlins' as unknown as 'timeout';
        await expectStoreError(
          store.updateRollout(rollout.rollout_id, { status: 'failed', failure_reason: bogus }),
          'invalid_argument',
        );
        await expectStoreError(
          store.updateAttempt(rollout.rollout_id, 'latest', { status: 'failed', failure_reason: bogus }),
          'invalid_argument',
        );
        expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('preparing');
      });
    });

    describe('history totals (rollgate: calls per rollgate.history.status)', () => {
      const withStatus = (r: AttemptedRollout, status: string, extra: Partial<SpanInput> = {}) =>
        makeSpan(r.rollout_id, r.attempt.attempt_id, {
          attributes: { 'rollgate.history.status': status, prompt_token_ids: [1] },
          ...extra,
        });

      it('counts each status once per stored call, over every write path, and ignores other spans', async () => {
        const rollout = await started();
        expect(rollout.history).toEqual({ linear: 0, healed: 0, forked: 0, bypassed: 0 });
        const first = withStatus(rollout, 'linear');
        await store.addSpan(first);
        await store.addSpan(first); // a duplicate is not stored, so not counted
        await store.addManySpans([
          withStatus(rollout, 'healed'),
          withStatus(rollout, 'linear'),
          withStatus(rollout, 'forked'),
        ]);
        await store.addSpan(withStatus(rollout, 'bypassed', { sequence_id: 40 }));
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        await store.addSpan(withStatus(rollout, 'not-a-status'));
        const second = await store.startAttempt(rollout.rollout_id);
        await store.addSpan(withStatus(second, 'forked'));
        const read = await store.getRolloutById(rollout.rollout_id);
        expect(read?.history).toEqual({ linear: 2, healed: 1, forked: 2, bypassed: 1 });
        const page = await store.queryRollouts({ rollout_id_in: [rollout.rollout_id] });
        expect(page.items[0]?.history).toEqual({ linear: 2, healed: 1, forked: 2, bypassed: 1 });
      });
    });

    if (factory.reopen !== undefined) {
      const reopen = factory.reopen.bind(factory);
      describe('durability across reopen', () => {
        it('keeps history totals', async () => {
          const rollout = await started();
          await store.addSpan(
            makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, {
              attributes: { 'rollgate.history.status': 'healed' },
            }),
          );
          store = await reopen();
          expect((await store.getRolloutById(rollout.rollout_id))?.history).toMatchObject({ healed: 1 });
        });

        it('keeps failure reasons', async () => {
          const rollout = await started();
          await store.updateAttempt(rollout.rollout_id, 'latest', {
            status: 'failed',
            failure_reason: 'gateway_paused',
          });
          store = await reopen();
          expect((await store.getRolloutById(rollout.rollout_id))?.failure_reason).toBe('gateway_paused');
        });

        it('keeps rollouts, statuses, queue order, spans, resources and workers; counters continue', async () => {
          const res = await store.addResources({ main: { resource_type: 'llm', endpoint: 'http://x', model: 'm' } });
          const running = await started(undefined, 'w-1');
          const span = await store.addSpan(
            makeSpan(running.rollout_id, running.attempt.attempt_id, { attributes: { prompt_token_ids: [1, 2, 3] } }),
          );
          expect(await store.nextSequenceId(running.rollout_id)).toBe(2);
          const q1 = await store.enqueueRollout({ input: 'first' });
          const q2 = await store.enqueueRollout({ input: 'second' });
          const done = await started();
          await store.updateAttempt(done.rollout_id, 'latest', { status: 'succeeded' });

          store = await reopen();

          const again = await store.getRolloutById(running.rollout_id);
          expect(again?.status).toBe('running');
          expect(attemptOf(again)?.status).toBe('running');
          expect((await store.getRolloutById(done.rollout_id))?.status).toBe('succeeded');
          const spans = await store.querySpans(running.rollout_id);
          expect(spans.items).toEqual([span]);
          // never reused (a backend may leave a gap)
          expect(await store.nextSequenceId(running.rollout_id)).toBeGreaterThan(2);
          expect(
            await store.addSpan(
              makeSpan(running.rollout_id, running.attempt.attempt_id, { span_id: span?.span_id ?? '' }),
            ),
          ).toBeNull();
          expect((await store.dequeueRollout())?.rollout_id).toBe(q1.rollout_id);
          expect((await store.dequeueRollout())?.rollout_id).toBe(q2.rollout_id);
          expect(await store.dequeueRollout()).toBeNull();
          expect((await store.getLatestResources())?.resources_id).toBe(res.resources_id);
          expect((await store.getWorkerById('w-1'))?.status).toBe('busy');
          const second = await store.startAttempt(running.rollout_id);
          expect(second.attempt.sequence_id).toBe(2);
        });
      });
    }
  });
}

/**
 * Rollout deletion, the completion log and non-latest resource writes (rollgate additions used by the v1 API).
 * Every backend runs it; kept apart from the v0.3 suite so a backend gains it together with the methods.
 */
export function describeLifecycleContract(name: string, factory: StoreContractFactory): void {
  describe(`LightningStore lifecycle contract: ${name}`, () => {
    let store: LightningStore & RolloutLifecycle;

    beforeEach(async () => {
      store = (await factory.create({ watchdogIntervalMs: WATCHDOG_MS })) as LightningStore & RolloutLifecycle;
    });

    afterEach(async () => {
      await store.close();
    });

    it('deleteRollout removes the rollout, its attempts and spans; a second delete is a no-op', async () => {
      const rollout = await store.startRollout({ input: 1 });
      const other = await store.startRollout({ input: 2 });
      await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
      await store.addSpan(makeSpan(other.rollout_id, other.attempt.attempt_id));
      expect(await store.deleteRollout(rollout.rollout_id)).toBe(true);
      expect(await store.getRolloutById(rollout.rollout_id)).toBeNull();
      expect(await store.getLatestAttempt(rollout.rollout_id)).toBeNull();
      expect((await store.queryAttempts(rollout.rollout_id)).total).toBe(0);
      expect((await store.querySpans(rollout.rollout_id)).total).toBe(0);
      expect((await store.queryRollouts()).items.map((r) => r.rollout_id)).toEqual([other.rollout_id]);
      const stats = await store.statistics();
      expect(stats).toMatchObject({ total_rollouts: 1, total_attempts: 1, total_spans: 1 });
      expect(await store.deleteRollout(rollout.rollout_id)).toBe(false);
      expect(await store.deleteRollout('ro-never-existed')).toBe(false);
      expect((await store.querySpans(other.rollout_id)).total).toBe(1);
      // The id can be used again for a fresh rollout.
      const again = await store.startRollout({ input: 3, rollout_id: rollout.rollout_id });
      expect(again.attempt.sequence_id).toBe(1);
      expect((await store.querySpans(rollout.rollout_id)).total).toBe(0);
    });

    it('logs each terminal transition once with monotonic seq; deletes leave tombstones that keep cursors valid', async () => {
      const a = await store.startRollout({ input: 'a' });
      const b = await store.startRollout({ input: 'b' });
      const c = await store.enqueueRollout({ input: 'c' });
      expect(await store.queryCompletions()).toEqual({ items: [], next_after: 0, total: 0 });
      await store.updateAttempt(a.rollout_id, 'latest', { status: 'succeeded' });
      await store.updateRollout(a.rollout_id, { status: 'succeeded' }); // not a transition: no second entry
      await store.updateRollout(c.rollout_id, { status: 'cancelled' });
      await store.updateAttempt(b.rollout_id, 'latest', { status: 'failed' });
      const all = await store.queryCompletions({ after: 0 });
      expect(all.items.map((e) => [e.rollout_id, e.status, e.deleted])).toEqual([
        [a.rollout_id, 'succeeded', false],
        [c.rollout_id, 'cancelled', false],
        [b.rollout_id, 'failed', false],
      ]);
      const seqs = all.items.map((e) => e.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(3);
      expect(all.next_after).toBe(seqs[2]);
      expect(all.total).toBe(3);

      const first = await store.queryCompletions({ after: 0, limit: 1 });
      expect(first.items.map((e) => e.rollout_id)).toEqual([a.rollout_id]);
      await store.deleteRollout(c.rollout_id);
      const rest = await store.queryCompletions({ after: first.next_after });
      expect(rest.items.map((e) => [e.rollout_id, e.deleted])).toEqual([
        [c.rollout_id, true],
        [b.rollout_id, false],
      ]);
      expect(rest.total).toBe(2);
      expect(await store.queryCompletions({ after: rest.next_after })).toMatchObject({
        items: [],
        next_after: rest.next_after,
      });
      // A retried rollout that finishes again is a second transition; seqs are never reused after deletes.
      await store.startAttempt(b.rollout_id);
      await store.updateAttempt(b.rollout_id, 'latest', { status: 'succeeded' });
      const later = await store.queryCompletions({ after: rest.next_after });
      expect(later.items.map((e) => [e.rollout_id, e.status])).toEqual([[b.rollout_id, 'succeeded']]);
      expect(later.items[0]?.seq).toBeGreaterThan(rest.next_after);
    });

    it('rejects a negative cursor or a limit below 1', async () => {
      await expectStoreError(store.queryCompletions({ after: -1 }), 'invalid_argument', { param: 'after' });
      await expectStoreError(store.queryCompletions({ limit: 0 }), 'invalid_argument', { param: 'limit' });
    });

    it('concurrent terminal updates append exactly one entry per transition', async () => {
      const rollout = await store.startRollout({ input: 1 });
      await Promise.all([
        store.updateRollout(rollout.rollout_id, { status: 'succeeded' }),
        store.updateRollout(rollout.rollout_id, { status: 'succeeded' }),
        store.updateAttempt(rollout.rollout_id, 'latest', { status: 'succeeded' }),
      ]);
      const page = await store.queryCompletions();
      expect(page.items.filter((e) => e.rollout_id === rollout.rollout_id)).toHaveLength(1);
    });

    it('a resources write with latest: false is stored without becoming the latest', async () => {
      const llm = { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' } as const;
      const main = await store.addResources({ main: llm });
      const side = await store.addResources({ main: { ...llm, model: 'candidate' } }, { latest: false });
      expect((await store.getLatestResources())?.resources_id).toBe(main.resources_id);
      expect((await store.getResourcesById(side.resources_id))?.resources.main).toMatchObject({ model: 'candidate' });
      const updated = await store.updateResources('rs-candidate', { main: llm }, { latest: false });
      expect(updated.version).toBe(1);
      await store.updateResources(main.resources_id, { main: llm }, { latest: false });
      expect((await store.getLatestResources())?.resources_id).toBe(main.resources_id);
      const rollout = await store.enqueueRollout({ input: 1 });
      expect(rollout.resources_id).toBe(main.resources_id);
      await store.updateResources('rs-candidate', { main: llm });
      expect((await store.getLatestResources())?.resources_id).toBe('rs-candidate');
    });

    if (factory.reopen !== undefined) {
      const reopen = factory.reopen.bind(factory);
      it('the completion log, tombstones and deletes survive a reopen; seq continues', async () => {
        const a = await store.startRollout({ input: 'a' });
        const b = await store.startRollout({ input: 'b' });
        await store.updateRollout(a.rollout_id, { status: 'succeeded' });
        await store.updateRollout(b.rollout_id, { status: 'failed' });
        await store.addSpan(makeSpan(b.rollout_id, b.attempt.attempt_id));
        await store.deleteRollout(b.rollout_id);
        const before = await store.queryCompletions();
        store = (await reopen()) as LightningStore & RolloutLifecycle;
        expect(await store.queryCompletions()).toEqual(before);
        expect(await store.getRolloutById(b.rollout_id)).toBeNull();
        expect((await store.querySpans(b.rollout_id)).total).toBe(0);
        const c = await store.startRollout({ input: 'c' });
        await store.updateRollout(c.rollout_id, { status: 'succeeded' });
        const after = await store.queryCompletions({ after: before.next_after });
        expect(after.items.map((e) => e.rollout_id)).toEqual([c.rollout_id]);
        expect(after.items[0]?.seq).toBeGreaterThan(before.next_after);
      });
    }
  });
}
