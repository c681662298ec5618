// docs/failure-classes.md (30 and 29): a call's stored span goes to the store from its call record, without any
// queue that drops on a burst; a burst loses none, a record with many attributes keeps them all, and each write can
// be awaited and says how it ended. Also checks the record -> stored span conversion.
import { afterEach, beforeEach, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { CallRecord } from '../../../src/gateway/recording/call-record.js';
import { StoreWriter } from '../../../src/gateway/recording/store-writer.js';
import { storedSpan } from '../../../src/gateway/recording/stored-span.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';

let store: MemoryStore;
let writer: StoreWriter;
beforeEach(() => {
  store = new MemoryStore();
  writer = new StoreWriter({ store, logger: silentLogger });
});
afterEach(async () => {
  await writer.flush();
  await store.close();
});

function endedRecord(seq: number, attributes: Record<string, unknown> = {}): CallRecord {
  const record = new CallRecord({ name: 'chat m', attribution: { rid: 'r', aid: 'a', seq }, attributes: {} });
  record.setAll(attributes);
  record.outcome = 'ok';
  record.endMs = record.startMs + 5;
  return record;
}

it('loses no span in a burst of 5000', async () => {
  await store.startRollout({ input: null, rollout_id: 'r', attempt_id: 'a' });
  const writes: Promise<string>[] = [];
  for (let seq = 1; seq <= 5000; seq++) {
    const span = storedSpan(endedRecord(seq));
    if (span === null) throw new Error('an attributed, ended record has a stored span');
    writes.push(writer.write(span));
  }
  expect(new Set(await Promise.all(writes))).toEqual(new Set(['stored']));
  const spans = await store.querySpans('r');
  expect(spans.total).toBe(5000);
  expect(spans.items.map((s) => s.sequence_id)).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
  expect(writer.failedWrites).toBe(0);
});

it('keeps more than 128 attributes and converts ids, times, status and resource', async () => {
  await store.startRollout({ input: null, rollout_id: 'r', attempt_id: 'a' });
  const attributes: Record<string, unknown> = { [A.ATTR_ROLLOUT_ID]: 'r', [A.ATTR_ATTEMPT_ID]: 'a' };
  for (let i = 0; i < 300; i++) attributes[`gen_ai.prompt.${i}.content`] = `m${i}`;
  // Values the store format cannot hold are left out rather than stored broken.
  attributes['not.finite'] = Number.NaN;
  attributes['mixed.array'] = [1, 'two'];
  attributes.absent = undefined;
  const record = endedRecord(7, attributes);
  record.outcome = 'error';
  record.errorType = 'boom';
  const span = storedSpan(record);
  if (span === null) throw new Error('an attributed, ended record has a stored span');
  expect(await writer.write(span)).toBe('stored');
  const [stored] = (await store.querySpans('r')).items;
  expect(stored?.sequence_id).toBe(7);
  expect(Object.keys(stored?.attributes ?? {})).toHaveLength(302);
  expect(stored?.start_time).toBeCloseTo(record.startMs / 1000, 6);
  expect(stored?.end_time).toBeCloseTo((record.startMs + 5) / 1000, 6);
  expect(stored?.status).toEqual({ status_code: 'ERROR', description: 'boom' });
  expect(stored?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  expect(stored?.span_id).toMatch(/^[0-9a-f]{16}$/);
  expect(stored?.span_id).toBe(record.spanId);
  expect(stored?.context).toEqual({
    trace_id: record.traceId,
    span_id: record.spanId,
    is_remote: false,
    trace_state: {},
  });
  expect(stored?.parent_id).toBeNull();
  expect(stored?.resource).toEqual({ attributes: { 'service.name': 'rollgate' }, schema_url: '' });
});

it('has nothing to store for a call outside any rollout, or one not ended', () => {
  const unattributed = new CallRecord({ name: 'chat m', attribution: null, attributes: {} });
  unattributed.endMs = unattributed.startMs;
  expect(storedSpan(unattributed)).toBeNull();
  expect(
    storedSpan(new CallRecord({ name: 'chat m', attribution: { rid: 'r', aid: 'a', seq: 1 }, attributes: {} })),
  ).toBeNull();
});

it('says a write failed, and counts it, when the store refuses it', async () => {
  // No rollout 'r' here and no orphan handler: the store's not_found is a failed write.
  const span = storedSpan(endedRecord(1));
  if (span === null) throw new Error('an attributed, ended record has a stored span');
  expect(await writer.write(span)).toBe('failed');
  expect(writer.failedWrites).toBe(1);
});
