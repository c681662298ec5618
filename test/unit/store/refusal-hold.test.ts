// Which database errors are storage refusals, and how long readiness holds one its read-only probe cannot see.
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/store/core/errors.js';
import { RefusalHold } from '../../../src/store/core/refusal-hold.js';
import { WRITABLE, type WriteHealth } from '../../../src/store/core/write-health.js';
import { mapDatabaseError } from '../../../src/store/postgres/postgres-db.js';
import { storageRefusal } from '../../../src/store/postgres/postgres-refusals.js';

function pgError(code: string, message = 'refused'): Error {
  return Object.assign(new Error(message), { code });
}

describe('storageRefusal', () => {
  it('classifies storage SQLSTATEs, socket errors and lost connections, and nothing else', () => {
    expect(storageRefusal(pgError('53100'))?.probeBlind).toBe(true);
    expect(storageRefusal(pgError('53300'))?.reason).toContain('connections');
    expect(storageRefusal(pgError('25006'))?.probeBlind).toBe(false);
    expect(storageRefusal(pgError('57P01'))).not.toBeNull();
    expect(storageRefusal(pgError('08006'))).not.toBeNull();
    expect(storageRefusal(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'))).not.toBeNull();
    expect(storageRefusal(new Error('Connection terminated unexpectedly'))).not.toBeNull();
    // The caller's data, a constraint, a bug: not the storage.
    expect(storageRefusal(pgError('22P02'))).toBeNull();
    expect(storageRefusal(pgError('23505'))).toBeNull();
    expect(storageRefusal(new Error('boom'))).toBeNull();
  });

  it('maps a refusal to a retryable unavailable once, even when mapped twice', () => {
    const mapped = mapDatabaseError(new Error('Client has encountered a connection error and is not queryable'));
    expect(mapped).toBeInstanceOf(StoreError);
    expect((mapped as StoreError).code).toBe('unavailable');
    expect(mapDatabaseError(mapped)).toBe(mapped);
  });
});

describe('RefusalHold', () => {
  function hold(): { hold: RefusalHold; changes: WriteHealth[]; advance(ms: number): void } {
    let now = 0;
    const changes: WriteHealth[] = [];
    return {
      hold: new RefusalHold({ onChange: (h) => changes.push(h), holdMs: 1_000, now: () => now }),
      changes,
      advance: (ms) => {
        now += ms;
      },
    };
  }

  it('keeps a full disk unwritable while probes pass, until a commit succeeds', () => {
    const { hold: h, changes } = hold();
    h.refused(mapDatabaseError(pgError('53100', 'could not extend file')));
    expect(h.health(WRITABLE).writable).toBe(false);
    h.committed();
    expect(h.health(WRITABLE).writable).toBe(true);
    expect(changes.map((c) => c.writable)).toEqual([false, true]);
  });

  it('lets the hold run out, and trusts the probe for refusals it can see', () => {
    const { hold: h, advance } = hold();
    h.refused(mapDatabaseError(pgError('53100')));
    advance(999);
    expect(h.health(WRITABLE).writable).toBe(false);
    advance(1);
    expect(h.health(WRITABLE).writable).toBe(true);
    h.refused(mapDatabaseError(pgError('25006')));
    expect(h.health(WRITABLE).writable).toBe(true);
    // Not a storage refusal: nothing to hold.
    h.refused(new StoreError('invalid_argument', 'bad'));
    expect(h.health(WRITABLE).writable).toBe(true);
  });
});
