// The routed-expert fixtures the unit tests decode (test/fixtures/routed-experts/responses.json) are still what the
// installed vLLM's own numpy2base64 makes: a vLLM upgrade that changes the wire form of `routed_experts` fails
// here instead of leaving the gateway's decoder checked against bytes vLLM no longer sends. (vLLM's CPU backend
// cannot produce routes itself: capturing them needs Model Runner V2, which needs Triton and a GPU.)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/python.js';
import { realEngineHome } from './vllm-server.js';

interface Fixtures {
  readonly vllm: string;
  readonly cases: Array<{ name: string }>;
}

describe("vLLM's routed-experts encoding", () => {
  it('makes the committed fixtures, case for case', () => {
    const committed = JSON.parse(
      readFileSync(join(REPO_ROOT, 'test/fixtures/routed-experts/responses.json'), 'utf8'),
    ) as Fixtures;
    const out = execFileSync(realEngineHome().python, [join(REPO_ROOT, 'test/real-engines/r3/make_fixtures.py')], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const now = JSON.parse(out) as Fixtures;
    expect(now.vllm).toBe(committed.vllm);
    expect(now.cases.map((c) => c.name)).toEqual(committed.cases.map((c) => c.name));
    for (const [i, fixture] of committed.cases.entries()) expect(now.cases[i], fixture.name).toEqual(fixture);
  }, 300_000);
});
