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

// vLLM's chunks are whole tokens; a text-reading parser must not depend on where inside a tag a chunk ends. Split at
// every character (a special token such as `</think>` or `<|tool_call_begin|>` stays whole: it is one token), each
// parser gives the reasoning and tool calls it gives for the same answer in token chunks (content may differ only
// where the whitespace rule depends on chunking, as in vLLM).
const SPECIAL_TOKEN = /^<[^\s<>]+>$/;
const TEXT_PARSERS = Object.keys(PARSERS).filter((family) => family !== 'qwen3');

describe('fallback parsers with chunks that end anywhere', () => {
  const cases = TEXT_PARSERS.flatMap((family) =>
    Object.entries(expected.families[family]?.cases ?? {}).flatMap(([name, entries]) =>
      entries.map((entry) => ({ family, name, entry, options: optionsTag(entry.options) })),
    ),
  );
  it.each(cases)('$family: $name ($options)', ({ family, entry }) => {
    const factory = PARSERS[family];
    const tokens = entry.streams.find((s) => s.tokens_per_chunk === 1);
    if (factory === undefined || tokens === undefined) throw new Error(`${family}: no parser or one-token stream`);
    const characters = tokens.chunks
      .flatMap((c) => (SPECIAL_TOKEN.test(c.text) ? [c.text] : [...c.text]))
      .map((text) => ({ text, ids: [0] }));
    const byToken = parseStream(factory, entry, tokens);
    const byCharacter = parseStream(factory, entry, { tokens_per_chunk: 0, chunks: characters, message: byToken });
    expect(byCharacter.reasoning).toEqual(byToken.reasoning);
    expect(byCharacter.tool_calls).toEqual(byToken.tool_calls);
  });
});
