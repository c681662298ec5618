// vLLM's own output parsers still answer the parser corpus as the committed expectations say
// (test/fixtures/parser-corpus/expected.json, which the gateway's fallback parsers are unit-tested against). A vLLM
// upgrade that changes how a family's answers are parsed fails here, naming the family and case, instead of
// leaving the gateway's parsers checked against answers vLLM no longer gives.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/python.js';
import { realEngineHome } from './vllm-server.js';

interface Expectations {
  readonly vllm: string;
  readonly families: Record<string, { cases: Record<string, unknown[]> }>;
}

describe('vLLM parser classes on the parser corpus', () => {
  it('give the committed expectations, whole and streamed, for every family and case', () => {
    const committed = JSON.parse(
      readFileSync(join(REPO_ROOT, 'test/fixtures/parser-corpus/expected.json'), 'utf8'),
    ) as Expectations;
    const out = execFileSync(
      realEngineHome().python,
      [join(REPO_ROOT, 'test/real-engines/parsers/run_vllm_parsers.py')],
      {
        encoding: 'utf8',
        maxBuffer: 256 << 20,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    const now = JSON.parse(out) as Expectations;
    expect(now.vllm).toBe(committed.vllm);
    expect(Object.keys(now.families)).toEqual(Object.keys(committed.families));
    for (const [family, { cases }] of Object.entries(committed.families)) {
      for (const [name, entries] of Object.entries(cases)) {
        expect(now.families[family]?.cases[name], `${family}: ${name}`).toEqual(entries);
      }
    }
  }, 600_000);
});
