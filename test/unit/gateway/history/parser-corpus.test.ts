// The gateway's fallback parsers against vLLM's own on the parser corpus: for every family, case and option set,
// the whole answer and every recorded stream (replayed chunk by chunk, assembled as a client assembles it) equal
// what vLLM's parser classes returned, except the documented differences, which must still differ.
import { describe, expect, it } from 'vitest';
import { type Entry, expected, optionsTag, PARSERS, parseStream, parseWhole } from './parser-corpus.js';
import { KNOWN_DIFFERENCES } from './parser-known-differences.js';

function known(family: string, name: string, entry: Entry, mode: string): boolean {
  const options = optionsTag(entry.options);
  return KNOWN_DIFFERENCES.some(
    (d) => d.family === family && d.case === name && d.options === options && d.modes.includes(mode),
  );
}

const CASES = Object.entries(PARSERS).flatMap(([family, factory]) => {
  const cases = expected.families[family]?.cases;
  if (cases === undefined) throw new Error(`the parser corpus has no family ${family}`);
  return Object.entries(cases).flatMap(([name, entries]) =>
    entries.map((entry) => ({ family, factory, name, entry, options: optionsTag(entry.options) })),
  );
});

describe(`fallback parsers vs vLLM ${expected.vllm}'s parsers (test/fixtures/parser-corpus)`, () => {
  it.each(CASES)('$family: $name ($options)', ({ family, factory, name, entry }) => {
    const results = [
      { mode: 'whole', vllm: entry.whole, ours: parseWhole(factory, entry) },
      ...entry.streams.map((stream) => ({
        mode: `stream k=${stream.tokens_per_chunk}`,
        vllm: stream.message,
        ours: parseStream(factory, entry, stream),
      })),
    ];
    for (const { mode, vllm, ours } of results) {
      if (known(family, name, entry, mode)) {
        expect(ours, `${mode}: listed as a known difference but equal to vLLM now`).not.toEqual(vllm);
      } else {
        expect(ours, mode).toEqual(vllm);
      }
    }
  });

  it('every known difference names a family, case and option set of the corpus', () => {
    for (const d of KNOWN_DIFFERENCES) {
      const entries = expected.families[d.family]?.cases[d.case];
      expect(entries, `${d.family} / ${d.case}`).toBeDefined();
      expect(entries?.some((e) => optionsTag(e.options) === d.options)).toBe(true);
      expect(d.why.length).toBeGreaterThan(20);
    }
  });
});
