// docs/failure-classes.md (30 and 29): spans go to the store through the gateway's own provider without the
// batch processor's drop-on-full queue; a burst loses none, a span with many attributes keeps them all,
// and each write can be awaited. Also checks the ReadableSpan -> store Span conversion.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { StoreSpanProcessor } from '../../../exporters/store-span-exporter.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { createTracing, type Tracing } from '../../../src/tracing/provider.js';

let store: MemoryStore;
let processor: StoreSpanProcessor;
let tracing: Tracing;
beforeEach(() => {
  store = new MemoryStore();
  processor = new StoreSpanProcessor({ store, logger: silentLogger });
  tracing = createTracing({ spanProcessors: [processor] });
});
afterEach(async () => {
  await tracing.close();
  await tracing.close();
  await store.close();
});

it('loses no span in a burst of 5000', async () => {
  await store.startRollout({ input: null, rollout_id: 'r', attempt_id: 'a' });
  for (let seq = 1; seq <= 5000; seq++) {
    tracing.tracer
      .startSpan('chat m', {
        attributes: { [A.ATTR_ROLLOUT_ID]: 'r', [A.ATTR_ATTEMPT_ID]: 'a', [A.ATTR_SPAN_SEQUENCE_ID]: seq },
      })
      .end();
  }
  await tracing.forceFlush();
  const spans = await store.querySpans('r');
  expect(spans.total).toBe(5000);
  expect(spans.items.map((s) => s.sequence_id)).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
  expect(processor.failedWrites).toBe(0);
});

it('keeps more than 128 attributes and converts ids, times, status, events and resource', async () => {
  await store.startRollout({ input: null, rollout_id: 'r', attempt_id: 'a' });
  const attributes: Record<string, number | string> = {
    [A.ATTR_ROLLOUT_ID]: 'r',
    [A.ATTR_ATTEMPT_ID]: 'a',
    [A.ATTR_SPAN_SEQUENCE_ID]: 7,
  };
  for (let i = 0; i < 300; i++) attributes[`gen_ai.prompt.${i}.content`] = `m${i}`;
  const span = tracing.tracer.startSpan('chat m', {
    kind: SpanKind.CLIENT,
    attributes,
    startTime: [1_700_000_000, 500_000_000],
  });
  span.addEvent('first_chunk', { n: 1 }, [1_700_000_000, 750_000_000]);
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
  span.end([1_700_000_001, 0]);
  const pending = processor.whenWritten(span.spanContext().spanId);
  expect(pending).toBeDefined();
  await pending;
  const [stored] = (await store.querySpans('r')).items;
  expect(stored?.sequence_id).toBe(7);
  expect(Object.keys(stored?.attributes ?? {})).toHaveLength(303);
  expect(stored?.start_time).toBeCloseTo(1_700_000_000.5, 6);
  expect(stored?.end_time).toBeCloseTo(1_700_000_001, 6);
  expect(stored?.status).toEqual({ status_code: 'ERROR', description: 'boom' });
  expect(stored?.events[0]).toMatchObject({ name: 'first_chunk', attributes: { n: 1 } });
  expect(stored?.events[0]?.timestamp).toBeCloseTo(1_700_000_000.75, 6);
  expect(stored?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  expect(stored?.span_id).toBe(span.spanContext().spanId);
  expect(stored?.parent_id).toBeNull();
  expect(stored?.resource.attributes['service.name']).toBe('rollgate');
});

it('writes nothing for a span without rollout attribution', async () => {
  const span = tracing.tracer.startSpan('chat m');
  span.end();
  expect(processor.whenWritten(span.spanContext().spanId)).toBeUndefined();
});
