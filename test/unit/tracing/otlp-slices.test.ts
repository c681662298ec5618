// An OTLP export cut into slices (src/tracing/otlp-slices.ts) holds the same spans, each under its own resource and
// scope, in order, in both encodings; bytes that are not a message come back whole for the decoder to refuse.
import { describe, expect, it } from 'vitest';
import { createOtlpCodec } from '../../../src/tracing/otlp-codec.js';
import { sliceJsonExport, sliceProtobufExport } from '../../../src/tracing/otlp-slices.js';
import { exportRequestType } from '../../integration/otlp/otlp-test-helpers.js';

const codec = createOtlpCodec();

interface Flat {
  readonly resource: unknown;
  readonly scope: unknown;
  readonly span: string;
}

/** Every span of a decoded export with the resource and scope it sits under, in order. */
function flatten(request: unknown): Flat[] {
  const out: Flat[] = [];
  const resources = (request as { resourceSpans?: unknown[] }).resourceSpans ?? [];
  for (const r of resources as Array<{ resource?: unknown; scopeSpans?: unknown[] }>) {
    for (const s of (r.scopeSpans ?? []) as Array<{ scope?: unknown; spans?: Array<{ name: string }> }>) {
      for (const span of s.spans ?? []) out.push({ resource: r.resource, scope: s.scope, span: span.name });
    }
  }
  return out;
}

function exportOf(layout: number[][]) {
  let n = 0;
  return {
    resourceSpans: layout.map((scopes, r) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: `service-${r}` } }] },
      schemaUrl: `https://schema/${r}`,
      scopeSpans: scopes.map((count, s) => ({
        scope: { name: `scope-${r}-${s}`, version: '1' },
        spans: Array.from({ length: count }, () => {
          n++;
          return {
            traceId: Buffer.alloc(16, 1),
            spanId: Buffer.from(n.toString(16).padStart(16, '0'), 'hex'),
            name: `span-${n}`,
            startTimeUnixNano: '1700000000000000000',
          };
        }),
      })),
    })),
  };
}

describe('sliceProtobufExport', () => {
  it('cuts across resources and scopes, keeping every span under its own resource and scope', () => {
    const whole = exportOf([[3, 0, 5], [4], [1, 6]]);
    const bytes = exportRequestType.encode(exportRequestType.fromObject(whole)).finish();
    const cut = sliceProtobufExport(bytes, { perSlice: 4, maxSpans: 100 });
    expect(cut.spans).toBe(19);
    expect(cut.slices).toHaveLength(5);
    const decoded = cut.slices.map((slice) => codec.decodeTraceRequest(slice));
    for (const slice of decoded) expect(flatten(slice).length).toBeLessThanOrEqual(4);
    expect(decoded.flatMap(flatten)).toEqual(flatten(codec.decodeTraceRequest(bytes)));
  });

  it('counts an export over the limit without cutting it', () => {
    const bytes = exportRequestType.encode(exportRequestType.fromObject(exportOf([[3, 4], [5]]))).finish();
    expect(sliceProtobufExport(bytes, { perSlice: 2, maxSpans: 11 })).toEqual({ spans: 12, slices: [bytes] });
  });

  it('leaves an export within one slice, and bytes that are not a message, whole', () => {
    const bytes = exportRequestType.encode(exportRequestType.fromObject(exportOf([[2]]))).finish();
    expect(sliceProtobufExport(bytes, { perSlice: 4, maxSpans: 100 })).toEqual({ spans: 2, slices: [bytes] });
    const broken = bytes.subarray(0, bytes.length - 3);
    expect(sliceProtobufExport(broken, { perSlice: 1, maxSpans: 100 })).toEqual({ spans: 0, slices: [broken] });
  });
});

describe('sliceJsonExport', () => {
  it('cuts the same way after JSON.parse', () => {
    const whole = JSON.parse(JSON.stringify(exportOf([[3, 0, 5], [4], [1, 6]]))) as unknown;
    const cut = sliceJsonExport(whole, { perSlice: 4, maxSpans: 100 });
    expect(cut.spans).toBe(19);
    expect(cut.slices).toHaveLength(5);
    expect(cut.slices.flatMap(flatten)).toEqual(flatten(whole));
  });

  it('leaves a body not shaped like an export whole, for the schema to refuse', () => {
    const odd = { resourceSpans: [{ scopeSpans: [{ spans: 'many' }] }] };
    expect(sliceJsonExport(odd, { perSlice: 1, maxSpans: 100 }).slices).toEqual([odd]);
  });
});
