// Routed experts (R3) from every response form the engines have shipped, decoded from fixtures made by vLLM's own
// numpy2base64 (test/real-engines/r3/make_fixtures.py), and the stored `.npy` form read back exactly.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';
import { canonicalRecord } from '../../../src/gateway/capture/canonical.js';
import {
  decodeNpyBase64,
  encodeNpyBase64,
  isRoutesDtype,
  type RoutedExperts,
  readNpy,
  storedToNpyBase64,
} from '../../../src/gateway/capture/routed-experts.js';
import { routedExpertsAttributes } from '../../../src/gateway/capture/routed-experts-record.js';

interface Fixture {
  readonly vllm: string;
  readonly layers: number;
  readonly top_k: number;
  readonly cases: Array<{ name: string; form: string; body: Record<string, unknown>; expected: number[][][] }>;
}

const fixtures = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../fixtures/routed-experts/responses.json'), 'utf8'),
) as Fixture;

function flat(routes: RoutedExperts): number[] {
  return Array.from(routes.values);
}

/** The stored attributes as the `.npy` batches and exports hand out. */
function npyOf(attributes: Record<string, unknown>): string {
  const shape = attributes[A.ATTR_ROUTED_EXPERTS_SHAPE] as [number, number, number];
  const dtype = attributes[A.ATTR_ROUTED_EXPERTS_DTYPE];
  if (!isRoutesDtype(dtype)) throw new Error(`dtype ${String(dtype)}`);
  return storedToNpyBase64({ data: String(attributes[A.ATTR_ROUTED_EXPERTS]), shape, dtype });
}

function stored(body: Record<string, unknown>): Record<string, unknown> {
  const capture = new CallCapture('chat');
  capture.setResponse(JSON.parse(JSON.stringify(body)));
  const record = canonicalRecord(capture.result(), { complete: true, unavailable: null });
  return routedExpertsAttributes(capture.routes, record);
}

describe('routed experts from the engines', () => {
  it('has a fixture for every form', () => {
    expect(fixtures.cases.map((c) => c.name)).toEqual([
      'vllm-npy-uint8',
      'vllm-npy-uint16',
      'vllm-npy-int32',
      'vllm-nested-int16',
      'vllm-raw-int32',
      'sglang-int32',
    ]);
  });

  for (const fixture of fixtures.cases) {
    it(`${fixture.name}: stored routes equal the engine's, row for row`, () => {
      const attributes = stored(fixture.body);
      expect(attributes[A.ATTR_ROUTED_EXPERTS_STATUS]).toBe('ok');
      const routes = decodeNpyBase64(npyOf(attributes));
      expect(routes).not.toBeNull();
      if (routes === null) return;
      expect(routes.rows).toBe(fixture.expected.length);
      expect(flat(routes)).toEqual(fixture.expected.flat(2));
      if (fixture.form === 'flat-int32') expect([routes.layers, routes.topK]).toEqual([1, 6]);
      else expect([routes.layers, routes.topK]).toEqual([fixtures.layers, fixtures.top_k]);
    });
  }

  it("keeps vLLM's own bytes and dtype, and stores the narrowest dtype for the others", () => {
    const dtypes = fixtures.cases.map((c) => [c.name, stored(c.body)[A.ATTR_ROUTED_EXPERTS_DTYPE]]);
    expect(dtypes).toEqual([
      ['vllm-npy-uint8', 'uint8'],
      ['vllm-npy-uint16', 'uint16'],
      ['vllm-npy-int32', 'uint8'],
      ['vllm-nested-int16', 'uint8'],
      ['vllm-raw-int32', 'uint8'],
      ['sglang-int32', 'uint8'],
    ]);
    const body = fixtures.cases[0]?.body as { choices: Array<{ routed_experts: string }> };
    const npy = Buffer.from(body.choices[0]?.routed_experts ?? '', 'base64');
    const data = Buffer.from(String(stored(body)[A.ATTR_ROUTED_EXPERTS]), 'base64');
    expect(npy.subarray(npy.length - data.length).equals(data)).toBe(true);
  });

  it('refuses routes that do not cover the tokens, and garbage', () => {
    const body = JSON.parse(JSON.stringify(fixtures.cases[0]?.body)) as {
      choices: Array<{ token_ids: number[]; routed_experts: string }>;
    };
    const choice = body.choices[0];
    if (choice === undefined) throw new Error('fixture');
    choice.token_ids = [...choice.token_ids, 12, 13];
    expect(stored(body)[A.ATTR_ROUTED_EXPERTS_STATUS]).toBe('not_covering');
    choice.routed_experts = 'not base64!';
    expect(stored(body)[A.ATTR_ROUTED_EXPERTS_STATUS]).toBe('malformed');
    expect(stored(body)[A.ATTR_ROUTED_EXPERTS]).toBeUndefined();
  });

  it('stores nothing when the answer carried no routes', () => {
    const body = JSON.parse(JSON.stringify(fixtures.cases[0]?.body)) as { choices: Array<Record<string, unknown>> };
    delete body.choices[0]?.routed_experts;
    expect(stored(body)).toEqual({});
  });

  it('assembles SGLang stream pieces (routed_experts_start_len) into the whole', () => {
    const fixture = fixtures.cases.find((c) => c.name === 'sglang-int32');
    if (fixture === undefined) throw new Error('fixture');
    const body = fixture.body as { prompt_token_ids: number[]; choices: Array<{ token_ids: number[] }> };
    const all = Buffer.from(Int32Array.from(fixture.expected.flat(2)).buffer);
    const perRow = 6 * 4;
    const cut = 10 * perRow;
    const capture = new CallCapture('chat');
    const ids = body.choices[0]?.token_ids ?? [];
    capture.addChunk({
      prompt_token_ids: body.prompt_token_ids,
      choices: [{ index: 0, delta: { content: 'o' }, token_ids: ids.slice(0, 3) }],
    });
    capture.addChunk({
      choices: [{ index: 0, delta: { content: 'k' }, token_ids: ids.slice(3) }],
      sgl_ext: { routed_experts: all.subarray(0, cut).toString('base64'), routed_experts_start_len: 0 },
    });
    capture.addChunk({
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      sgl_ext: { routed_experts: all.subarray(cut).toString('base64'), routed_experts_start_len: 10 },
    });
    const record = canonicalRecord(capture.result(), { complete: true, unavailable: null });
    const attributes = routedExpertsAttributes(capture.routes, record);
    const routes = decodeNpyBase64(npyOf(attributes));
    expect(routes === null ? null : flat(routes)).toEqual(fixture.expected.flat(2));
  });

  it('encodes in the narrowest dtype and reads it back', () => {
    const values = Int32Array.from({ length: 4 * 2 * 3 }, (_, i) => (i * 37) % 300);
    const routes = { rows: 4, layers: 2, topK: 3, values };
    const text = encodeNpyBase64(routes);
    const back = decodeNpyBase64(text);
    expect(back?.values).toBeInstanceOf(Uint16Array);
    expect(back === null ? null : flat(back)).toEqual(Array.from(values));
    const bytes = Buffer.from(text, 'base64');
    // numpy's layout: data on a 64-byte boundary; a whole number of base64 groups before it.
    expect((bytes.length - values.length * 2) % 192).toBe(0);
    expect(readNpy(bytes.subarray(0, bytes.length - 1))).toBeNull();
  });

  it('reads a .npy whose data does not start on its dtype boundary', () => {
    const dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1, 2), }";
    // An odd header length puts the uint16 data at an odd offset: it is copied, not viewed.
    const headerLength = dict.length + 3;
    const header = Buffer.alloc(10 + headerLength, 0x20);
    Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(header, 0);
    header.writeUInt16LE(headerLength, 8);
    header.write(dict, 10, 'latin1');
    header[10 + headerLength - 1] = 0x0a;
    const data = Buffer.alloc(4);
    data.writeUInt16LE(7, 0);
    data.writeUInt16LE(300, 2);
    for (const lead of [0, 1]) {
      const bytes = Buffer.concat([Buffer.alloc(lead), header, data]).subarray(lead);
      const routes = readNpy(bytes);
      expect(routes === null ? null : flat(routes)).toEqual([7, 300]);
    }
  });
});
