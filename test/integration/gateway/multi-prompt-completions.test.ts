// Several prompts in one completions call (`prompt: [a, b]` or `[[ids], [ids]]`, with n): vLLM numbers the
// choices output_index + prompt_index * n and gives each its own prompt ids. The span keeps each choice with
// its own prompt (`rollgate.choices.<i>.prompt_token_ids` where it differs from `prompt_token_ids`), and
// training data pairs choice 0 with prompt a only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTriplets } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { tokenize } from '../../servers/mock-vllm.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe.each([false, true])('stream=%s', (stream) => {
  it.each([
    ['text prompts', ['ab', 'cde']],
    [
      'token-id prompts',
      [
        [5, 6],
        [7, 8, 9],
      ],
    ],
  ])('%s with n=2: each choice keeps its own prompt ids', async (_label, prompts) => {
    const rid = rolloutId('multi');
    const body = { model: 'mock-model', prompt: prompts, n: 2, max_tokens: 3 };
    const created = await h.client(rid).completions.create((stream ? { ...body, stream: true } : body) as never);
    if (stream) for await (const _ of created as unknown as AsyncIterable<unknown>) void _;
    const [a, b] = prompts.map((p) => (typeof p === 'string' ? tokenize(p) : p));
    const [span] = await h.spans(rid);
    const attributes = span?.attributes ?? {};
    expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(a);
    expect(attributes[A.choicePromptTokenIdsAttr(1)]).toBeUndefined();
    expect(attributes[A.choicePromptTokenIdsAttr(2)]).toEqual(b);
    expect(attributes[A.choicePromptTokenIdsAttr(3)]).toEqual(b);
    for (const i of [1, 2, 3]) expect(attributes[A.choiceTokenIdsAttr(i)]).toHaveLength(3);
    const triplets = spansToTriplets(span ? [span] : []);
    expect(triplets.map((t) => [t.prompt.token_ids, t.response.token_ids])).toEqual([
      [a, attributes[A.ATTR_RESPONSE_TOKEN_IDS]],
    ]);
  });
});
