// docs/failure-classes.md (46-47): the in-flight slot is held until the caller releases it (upstream closed),
// pause refuses with 429 + Retry-After + X-Agl-Paused, hold mode is bounded, drain is event-driven.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isGatewayError } from '../../../src/errors.js';
import type { PauseState } from '../../../src/gateway/swap/pause-gate.js';
import { PauseGate } from '../../../src/gateway/swap/pause-gate.js';

describe('PauseGate', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reports a pause that outlives alertAfterS once, and never one that was resumed in time (docs/failure-classes.md#47)', () => {
    vi.useFakeTimers();
    const overdue: PauseState[] = [];
    const gate = new PauseGate({
      mode: 'reject',
      retryAfterS: 5,
      maxHoldMs: 0,
      alertAfterS: 60,
      onOverdue: (state) => overdue.push(state),
    });
    gate.pause({ reason: 'weights v2' });
    vi.advanceTimersByTime(59_000);
    gate.resume();
    vi.advanceTimersByTime(120_000);
    expect(overdue).toEqual([]);
    expect(gate.overdue).toBe(false);

    gate.pause({ reason: 'weights v3' });
    vi.advanceTimersByTime(30_000);
    // Pausing again while paused does not restart the clock.
    gate.pause({ reason: 'weights v3' });
    vi.advanceTimersByTime(31_000);
    expect(overdue.map((s) => s.reason)).toEqual(['weights v3']);
    expect(gate.overdue).toBe(true);
    vi.advanceTimersByTime(600_000);
    expect(overdue).toHaveLength(1);
    // Still paused: the gate reports, it does not resume by itself.
    expect(gate.paused).toBe(true);
    gate.resume();
    expect(gate.overdue).toBe(false);
  });

  it('counts in-flight calls until each releases, once', async () => {
    const gate = new PauseGate({ mode: 'reject', retryAfterS: 5, maxHoldMs: 0 });
    const a = await gate.enter();
    const b = await gate.enter();
    expect(gate.state().inflight).toBe(2);
    a();
    a();
    expect(gate.state().inflight).toBe(1);
    b();
    expect(gate.state().inflight).toBe(0);
  });

  it('refuses new calls while paused with gateway_paused, Retry-After and X-Agl-Paused', async () => {
    const gate = new PauseGate({ mode: 'reject', retryAfterS: 5, maxHoldMs: 0 });
    gate.pause({ retryAfterSeconds: 3, reason: 'weight update' });
    const error = await gate.enter().catch((e: unknown) => e);
    expect(isGatewayError(error)).toBe(true);
    if (!isGatewayError(error)) return;
    expect(error.code).toBe('gateway_paused');
    expect(error.retryAfterS).toBe(3);
    expect(error.headers).toEqual({ 'x-agl-paused': 'true' });
    expect(gate.state()).toMatchObject({ paused: true, reason: 'weight update', inflight: 0 });
    gate.resume();
    expect(gate.state()).toMatchObject({ paused: false, reason: null, retry_after_seconds: 5 });
    (await gate.enter())();
  });

  it('keeps in-flight calls counted across pause until they release, and wakes drain waiters', async () => {
    const gate = new PauseGate({ mode: 'reject', retryAfterS: 1, maxHoldMs: 0 });
    const releases = await Promise.all([gate.enter(), gate.enter(), gate.enter()]);
    gate.pause();
    let drained = false;
    const drain = gate.waitForDrain().then(() => {
      drained = true;
    });
    releases[0]!();
    releases[1]!();
    await Promise.resolve();
    expect(drained).toBe(false);
    expect(gate.inflight).toBe(1);
    releases[2]!();
    await drain;
    expect(drained).toBe(true);
  });

  it('holds calls in hold mode until resume', async () => {
    const gate = new PauseGate({ mode: 'hold', retryAfterS: 1, maxHoldMs: 10_000 });
    gate.pause();
    let entered = false;
    const pending = gate.enter().then((release) => {
      entered = true;
      return release;
    });
    await new Promise((r) => setImmediate(r));
    expect(entered).toBe(false);
    gate.resume();
    const release = await pending;
    expect(gate.inflight).toBe(1);
    release();
  });

  it('gives up holding after maxHoldMs with a 429', async () => {
    const gate = new PauseGate({ mode: 'hold', retryAfterS: 2, maxHoldMs: 20 });
    gate.pause();
    const error = await gate.enter().catch((e: unknown) => e);
    expect(isGatewayError(error) && error.code).toBe('gateway_paused');
    expect(gate.inflight).toBe(0);
  });

  it('stops holding a call whose client went away', async () => {
    const gate = new PauseGate({ mode: 'hold', retryAfterS: 2, maxHoldMs: 10_000 });
    gate.pause();
    const controller = new AbortController();
    const pending = gate.enter(controller.signal).catch((e: unknown) => e);
    controller.abort(new Error('client gone'));
    expect(await pending).toBeInstanceOf(Error);
    gate.resume();
    expect(gate.inflight).toBe(0);
  });
});
