// The span codec returns exactly the span it encoded (attributes in order, strings, numbers, odd shapes), over
// many generated multi-turn rollouts, and stores each value once: logprobs.content costs little more than its
// tokens, float32 logprobs take 4 bytes, a turn's re-sent history costs only its new part.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../../src/algorithms/rng.js';
import {
  decodeSpan,
  dictionaryOf,
  type SpanBase,
  SpanEncoder,
  sharedDictionaryId,
  spanBaseOf,
} from '../../../src/store/codec/span-codec.js';
import type { Attributes, Span } from '../../../src/store/core/types.js';

const PIECES = ['the ', 'tool ', 'ü', '漢字', '😀', 'é', '\n', '"q"', '\\', '\u2028', 'a', ' ', '{}', '\ud83d'];

function text(random: () => number, length: number): string {
  let out = '';
  while (out.length < length) out += PIECES[Math.floor(random() * PIECES.length)];
  return out;
}

function shuffled<T>(random: () => number, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function span(options: { rolloutId: string; attemptId: string; seq: number; attributes: Attributes }): Span {
  return {
    rollout_id: options.rolloutId,
    attempt_id: options.attemptId,
    sequence_id: options.seq,
    trace_id: 'a'.repeat(32),
    span_id: `s${options.seq}`.padEnd(16, '0'),
    parent_id: null,
    name: 'chat m',
    status: { status_code: 'OK', description: null },
    attributes: options.attributes,
    events: [],
    links: [],
    start_time: 1_700_000_000.25,
    end_time: 1_700_000_001.5,
    context: null,
    parent: null,
    resource: { attributes: { 'service.name': 'x' }, schema_url: '' },
  };
}

/** The engine's logprobs.content for `tokens` (bytes as the engine sends them: UTF-8, or raw for split characters). */
function logprobsContent(random: () => number, tokens: string[], chosen: number[], top: number): string {
  return JSON.stringify(
    tokens.map((token, i) => ({
      token,
      logprob: chosen[i],
      bytes: random() < 0.05 ? [0xe6, 0xbc] : random() < 0.02 ? null : [...Buffer.from(token, 'utf8')],
      top_logprobs: Array.from({ length: top }, (_, j) => ({
        token: j === 0 ? token : text(random, 2),
        logprob: j === 0 ? chosen[i] : Math.fround(-random() * 5),
        bytes: [...Buffer.from(j === 0 ? token : 'x', 'utf8')],
      })),
    })),
  );
}

/** One rollout's chat spans: growing prompt ids and history, logprobs in several shapes, attributes in any order. */
function rollout(seed: number): Span[] {
  const random = createRng(seed).next;
  const spans: Span[] = [];
  let prompt = Array.from({ length: 50 + Math.floor(random() * 200) }, () => Math.floor(random() * 151_000));
  let history = [{ role: 'system', content: text(random, 400) }];
  const turns = 1 + Math.floor(random() * 5);
  let order: string[] | null = null;
  for (let t = 0; t < turns; t++) {
    const response = Array.from({ length: 1 + Math.floor(random() * 40) }, () => Math.floor(random() * 151_000));
    const float32 = random() < 0.7;
    const chosen = response.map(() => (float32 ? Math.fround(-random() * 4) : -random() * 4));
    const tokens = response.map(() => text(random, 1 + Math.floor(random() * 3)));
    history = [...history, { role: 'user', content: text(random, 100 + Math.floor(random() * 300)) }];
    const entries: Array<[string, Attributes[string]]> = [
      ['gen_ai.operation.name', 'chat'],
      ['gen_ai.input.messages', JSON.stringify(history)],
      ['gen_ai.tool.definitions', JSON.stringify([{ name: 'read', description: text(random, 300) }])],
      ['prompt_token_ids', prompt],
      ['response_token_ids', response],
      ['rollgate.response.logprobs', chosen],
      ['gen_ai.usage.input_tokens', prompt.length],
      ['gen_ai.response.finish_reasons', ['stop']],
      ['rollgate.model_version.changed_in_flight', random() < 0.5],
      ['gen_ai.request.temperature', 0.7],
    ];
    const shape = random();
    if (shape < 0.6) entries.push(['logprobs.content', logprobsContent(random, tokens, chosen, t % 3)]);
    // The chosen values differ from the array (a second choice's content, say): stored, not taken from the array.
    else if (shape < 0.7)
      entries.push([
        'logprobs.content',
        logprobsContent(
          random,
          tokens,
          chosen.map((v) => v / 2),
          1,
        ),
      ]);
    // Not what JSON.stringify makes of it (spacing, key order, extra keys): kept as it came.
    else if (shape < 0.8) entries.push(['logprobs.content', JSON.stringify([{ logprob: -1, token: 'a' }], null, 1)]);
    else if (shape < 0.85) entries.push(['logprobs.content', '[{"token":"a","logprob":-1,"bytes":[97],"x":1}]']);
    else if (shape < 0.9) entries.push(['logprobs.content', 'not json']);
    if (random() < 0.3) entries.push(['odd.floats', [1, 2.5, -0, 1e300, 5e-324]]);
    if (random() < 0.3) entries.push(['odd.ints', [0, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 40]]);
    if (random() < 0.3) entries.push(['odd.int32', [0, -1, 2 ** 31 - 1, -(2 ** 31), 5, 5, 5, 5, 5, 5, 5, 5]]);
    // Integer arrays of every width (bit-packed when that is smaller than varints), constant ones (width 0).
    const width = Math.floor(random() * 33);
    const low = Math.floor(random() * 2 ** 31) - 2 ** 30;
    entries.push([
      'odd.width',
      Array.from({ length: 1 + Math.floor(random() * 60) }, () =>
        Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, low + Math.floor(random() * 2 ** width))),
      ),
    ]);
    if (random() < 0.2) entries.push(['odd.constant', [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]);
    if (random() < 0.2) entries.push(['odd.empty', []]);
    if (random() < 0.2) entries.push(['__proto__', 'an attribute named __proto__']);
    if (random() < 0.2) entries.push(['odd.strings', ['a', 'b']]);
    const attributes: Record<string, Attributes[string]> = {};
    // Half the turns keep the names in the previous turn's order (what a gateway writes), so a head can leave
    // the names out; the others shuffle them.
    const previous = order;
    const ordered: Array<[string, Attributes[string]]> =
      previous !== null && random() < 0.5
        ? [...entries].sort((a, b) => rank(previous, a[0]) - rank(previous, b[0]))
        : shuffled(random, entries);
    order = ordered.map(([name]) => name);
    for (const [name, value] of ordered) {
      Object.defineProperty(attributes, name, { value, enumerable: true, writable: true, configurable: true });
    }
    attributes['gen_ai.output.messages'] = JSON.stringify([{ role: 'assistant', content: tokens.join('') }]);
    spans.push(span({ rolloutId: `ro-${seed}`, attemptId: 'at-1', seq: t + 1, attributes }));
    history = [...history, { role: 'assistant', content: tokens.join('') }];
    prompt = random() < 0.8 ? [...prompt, ...response, 7, 8, 9] : prompt.slice(0, 10);
  }
  return spans;
}

function rank(order: readonly string[], name: string): number {
  const at = order.indexOf(name);
  return at === -1 ? order.length : at;
}

/** Exact equality: JSON text (key order included) and every number by Object.is (-0, float32 vs float64). */
function expectExact(got: Span, want: Span): void {
  expect(JSON.stringify(got)).toBe(JSON.stringify(want));
  expect(Object.keys(got.attributes)).toEqual(Object.keys(want.attributes));
  for (const name of Object.keys(want.attributes)) {
    const w = want.attributes[name];
    const g = got.attributes[name];
    if (Array.isArray(w)) {
      expect(Array.isArray(g), name).toBe(true);
      for (const [i, v] of (w as readonly unknown[]).entries()) {
        expect(Object.is((g as readonly unknown[])[i], v), name).toBe(true);
      }
    } else {
      expect(Object.is(g, w), name).toBe(true);
    }
  }
}

/** Encodes a rollout's spans each relative to the one before, decodes them back, returns the blobs. */
function roundTrip(spans: readonly Span[]): Buffer[] {
  const encoder = new SpanEncoder();
  const blobs: Buffer[] = [];
  let base: SpanBase | null = null;
  for (const s of spans) {
    const encoded = encoder.encode(s, { base });
    blobs.push(encoded.blob);
    base = encoded.self;
  }
  // Decoding sees only the blobs: each base is built from what decoding the previous blob gave.
  let decodedBase: SpanBase | undefined;
  blobs.forEach((blob, i) => {
    const prior = decodedBase;
    const decoded = decodeSpan(blob, { base: () => prior });
    expectExact(decoded.span, spans[i] as Span);
    decodedBase = spanBaseOf(decoded.span, decoded.head);
  });
  return blobs;
}

describe('span codec', () => {
  it('deflates a first call against a shared dictionary made from another first call', () => {
    const [earlier] = rollout(11);
    const [first] = rollout(12);
    if (earlier === undefined || first === undefined) throw new Error('no spans');
    // Both rollouts share the system prompt and the tool definitions only if built alike: make them so.
    const same = {
      ...first,
      attributes: { ...first.attributes, 'gen_ai.input.messages': earlier.attributes['gen_ai.input.messages'] ?? '' },
    };
    const encoder = new SpanEncoder();
    const made = encoder.encode(earlier, { base: null });
    const shared = { id: 7, bytes: dictionaryOf(made.self) };
    const alone = encoder.encode(same, { base: null });
    const withShared = encoder.encode(same, { base: null, shared });
    expect(withShared.blob.length).toBeLessThan(alone.blob.length - 300);
    expect(sharedDictionaryId(withShared.blob)).toBe(7);
    expect(sharedDictionaryId(alone.blob)).toBeNull();
    expectExact(
      decodeSpan(withShared.blob, { base: () => undefined, shared: (id) => (id === 7 ? shared.bytes : undefined) })
        .span,
      same,
    );
    expect(() => decodeSpan(withShared.blob, { base: () => undefined })).toThrow(/dictionary 7/);
  });

  it('reads back exactly what was written, over 300 generated rollouts with odd attributes', () => {
    for (let seed = 1; seed <= 300; seed++) roundTrip(rollout(seed));
  });

  it('reads back spans without attributes, non-chat spans, events and links, and a 2 MB string', () => {
    const random = createRng(99).next;
    const plain = span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes: {} });
    const reward: Span = {
      ...span({ rolloutId: 'r', attemptId: 'a', seq: 2, attributes: { 'agentlightning.reward.0.value': 0.5 } }),
      name: 'agentlightning.annotation',
      events: [{ name: 'e', attributes: { k: [1, 2] }, timestamp: 1.5 }],
      links: [{ context: { trace_id: 't', span_id: 's', is_remote: true, trace_state: { a: 'b' } }, attributes: null }],
    };
    const huge = span({
      rolloutId: 'r',
      attemptId: 'a',
      seq: 3,
      attributes: { 'gen_ai.input.messages': text(random, 2e6) },
    });
    const next = span({
      rolloutId: 'r',
      attemptId: 'a',
      seq: 4,
      attributes: { 'gen_ai.input.messages': `${huge.attributes['gen_ai.input.messages']}${text(random, 100)}` },
    });
    const blobs = roundTrip([plain, reward, huge, next]);
    // The re-sent 2 MB history costs its new suffix only.
    expect(blobs[3]?.length ?? 0).toBeLessThan(1_000);
  });

  it('stores logprobs.content at little more than its tokens when it repeats the logprobs array', () => {
    const random = createRng(5).next;
    const tokens = Array.from({ length: 200 }, () => text(random, 3));
    const chosen = tokens.map(() => Math.fround(-random() * 4));
    const attributes = { 'rollgate.response.logprobs': chosen };
    const without = new SpanEncoder().encode(span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes }), {
      base: null,
    });
    const content = logprobsContent(createRng(6).next, tokens, chosen, 0);
    const withContent = new SpanEncoder().encode(
      span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes: { ...attributes, 'logprobs.content': content } }),
      { base: null },
    );
    expect(content.length).toBeGreaterThan(10_000);
    expect(withContent.blob.length - without.blob.length).toBeLessThan(1_200);
    // float32-exact logprobs take 4 bytes each (8 when a value would change in float32).
    expect(without.blob.length).toBeLessThan(200 * 4 + 300);
    const doubles = chosen.map((v) => v + 1e-12);
    const wide = new SpanEncoder().encode(
      span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes: { 'rollgate.response.logprobs': doubles } }),
      { base: null },
    );
    expect(wide.blob.length).toBeGreaterThan(200 * 8);
    roundTrip([
      span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes: { 'rollgate.response.logprobs': doubles } }),
    ]);
  });

  it('reads blobs written before attributes could be left to the base and dictionaries cut to a tail', () => {
    const fixture = JSON.parse(
      readFileSync(new URL('./fixtures/span-codec-format1.json', import.meta.url), 'utf8'),
    ) as {
      cases: Array<{ spans: string[]; blobs: string[]; shared: string | null }>;
    };
    expect(fixture.cases.length).toBeGreaterThan(2);
    for (const { spans, blobs, shared } of fixture.cases) {
      const dictionary = shared === null ? undefined : Buffer.from(shared, 'base64');
      let base: SpanBase | undefined;
      blobs.forEach((text, i) => {
        const prior = base;
        const decoded = decodeSpan(Buffer.from(text, 'base64'), { base: () => prior, shared: () => dictionary });
        expect(JSON.stringify(decoded.span)).toBe(spans[i]);
        base = spanBaseOf(decoded.span, decoded.head);
      });
    }
  });

  it('leaves out of the head the short attributes equal to the base and names in the base order', () => {
    const attributes = (seq: number): Attributes => ({
      'gen_ai.request.model': 'a-model-name-that-repeats',
      'rollgate.backend': 'http://10.1.2.3:8000/v1/repeated-backend',
      'rollgate.request_id': `request-${seq}`,
      'gen_ai.response.finish_reasons': ['stop'],
      'rollgate.upstream.status_code': 200,
      prompt_token_ids: [1, 2, 3],
    });
    const first = span({ rolloutId: 'r', attemptId: 'a', seq: 1, attributes: attributes(1) });
    const second = span({ rolloutId: 'r', attemptId: 'a', seq: 2, attributes: attributes(2) });
    const encoder = new SpanEncoder();
    const a = encoder.encode(first, { base: null });
    const b = encoder.encode(second, { base: a.self });
    const decoded = decodeSpan(b.blob, { base: () => spanBaseOf(first, a.self.head) });
    expectExact(decoded.span, second);
    expect(decoded.head).toContain('request-2');
    for (const repeated of ['a-model-name-that-repeats', 'repeated-backend', 'gen_ai.request.model'])
      expect(decoded.head).not.toContain(repeated);
    // A value that changed is stored again, and the names once their order changed.
    const moved = span({
      rolloutId: 'r',
      attemptId: 'a',
      seq: 3,
      attributes: { 'rollgate.upstream.status_code': 500, ...attributes(3) },
    });
    const c = encoder.encode(
      { ...moved, attributes: { ...moved.attributes, 'rollgate.upstream.status_code': 500 } },
      {
        base: b.self,
      },
    );
    const again = decodeSpan(c.blob, { base: () => spanBaseOf(decoded.span, decoded.head) });
    expect(again.span.attributes['rollgate.upstream.status_code']).toBe(500);
    expect(Object.keys(again.span.attributes)).toEqual(Object.keys(moved.attributes));
    expect(again.head).toContain('gen_ai.request.model');
  });

  it('reads a NaN or infinite attribute repeated from the base as JSON stores it, as before', () => {
    const attributes = { 'odd.nan': Number.NaN, 'odd.inf': [1, Number.POSITIVE_INFINITY, 'x'], 'gen_ai.system': 'x' };
    const encoder = new SpanEncoder();
    const spans = [1, 2].map((seq) =>
      span({ rolloutId: 'r', attemptId: 'a', seq, attributes: attributes as unknown as Attributes }),
    );
    const first = encoder.encode(spans[0] as Span, { base: null });
    const second = encoder.encode(spans[1] as Span, { base: first.self });
    const read = decodeSpan(first.blob, { base: () => undefined });
    const again = decodeSpan(second.blob, { base: () => spanBaseOf(read.span, read.head) });
    expect(again.span.attributes).toEqual({ 'odd.nan': null, 'odd.inf': [1, null, 'x'], 'gen_ai.system': 'x' });
  });

  it('deflates a small head against the tail of a long shared dictionary only', () => {
    const random = createRng(8).next;
    const earlier = span({
      rolloutId: 'r',
      attemptId: 'a',
      seq: 1,
      attributes: { 'gen_ai.system_instructions': text(random, 40_000), 'gen_ai.operation.name': 'chat' },
    });
    const encoder = new SpanEncoder();
    const bytes = dictionaryOf(encoder.encode(earlier, { base: null }).self);
    expect(bytes.length).toBe(32 * 1024);
    // Text the whole dictionary would serve from its first half.
    const repeated = bytes.subarray(2_000, 2_400).toString('utf8');
    const small = span({ rolloutId: 'q', attemptId: 'b', seq: 1, attributes: { 'gen_ai.input.messages': repeated } });
    const blob = encoder.encode(small, { base: null, shared: { id: 3, bytes } }).blob;
    // The dictionary's first half was never read: another first half decodes the same.
    const other = Buffer.concat([Buffer.alloc(16 * 1024, 0x41), bytes.subarray(16 * 1024)]);
    expectExact(decodeSpan(blob, { base: () => undefined, shared: () => other }).span, small);
  });

  it('keeps logprobs.content texts that JSON.stringify would spell otherwise as they came', () => {
    const entry = (logprob: string, token = '"a"', bytes = '[97]') =>
      `[{"token":${token},"logprob":${logprob},"bytes":${bytes},"top_logprobs":[]}]`;
    // More than 16 logprobs are checked together, fewer one by one: both ways see the odd spellings.
    const many = (logprob: string) =>
      `[${Array.from({ length: 20 }, (_, i) => entry(i === 13 ? logprob : '-0.25').slice(1, -1)).join(',')}]`;
    const odd = [
      many('-1.0'),
      many('-1,-2'),
      many('[-1]'),
      many(' -1'),
      many('1e999'),
      entry('-1.0'),
      entry('-0'),
      entry('-1E-7'),
      entry('-0.0000001'),
      entry(' -1'),
      entry('-01'),
      entry('1e999'),
      entry('"-1"'),
      entry('[-1]'),
      entry('-1,-2'),
      entry('-1', '"\\u0061"'),
      entry('-1', '"\\/"'),
      entry('-1', '"a"', '[097]'),
      entry('-1', '"a"', '[256]'),
      entry('-1', '"a"', '[ 97]'),
      `${entry('-1')} `,
      `[${entry('-1').slice(1, -1)},{"token":"b","logprob":-2,"bytes":[98]}]`,
    ];
    const canonical = [
      many('-1e-7'),
      entry('-1e-7'),
      entry('-0.5', '"\\n\\"\\\\\\u0001\\ud83d"', '[10,34,92,1]'),
      entry('-1', '"😀漢"', '[240,159,152,128,230,188,162]'),
      entry('-1', '"a"', 'null'),
      entry('-1', '"a"', '[]'),
    ];
    const spans = [...odd, ...canonical].map((content, i) =>
      span({ rolloutId: 'r', attemptId: 'a', seq: i + 1, attributes: { 'logprobs.content': content } }),
    );
    for (const s of spans) roundTrip([s]);
    // Canonical texts are rebuilt from their parts, odd ones kept: only the odd ones' heads hold the text.
    for (const [i, s] of spans.entries()) {
      const { head } = decodeSpan(new SpanEncoder().encode(s, { base: null }).blob, { base: () => undefined });
      expect(head.includes('"logprobs.content":'), `${i}: ${s.attributes['logprobs.content']}`).toBe(i < odd.length);
    }
  });

  it('refuses to decode a blob whose base is not given', () => {
    const spans = rollout(3).slice(0, 2);
    if (spans.length < 2) spans.push({ ...(spans[0] as Span), sequence_id: 2 });
    const encoder = new SpanEncoder();
    const first = encoder.encode(spans[0] as Span, { base: null });
    const second = encoder.encode(spans[1] as Span, { base: first.self });
    expect(() => decodeSpan(second.blob, { base: () => undefined })).toThrow(/base/);
  });
});
