// Pieces of APO: placeholder checks (59), critique payload limits (58), seeded batches, prompt variants.
import { describe, expect, it } from 'vitest';
import { createBatchIterator } from '../../../src/algorithms/apo/batches.js';
import { boundExperiments, toExperiment } from '../../../src/algorithms/apo/experiments.js';
import { checkPlaceholders, extractPlaceholders, formatTemplate } from '../../../src/algorithms/apo/placeholders.js';
import { cleanEditedTemplate, EDIT_VARIANTS, GRADIENT_VARIANTS } from '../../../src/algorithms/apo/prompts.js';
import type { TaskResult } from '../../../src/algorithms/evaluation.js';
import { createRng } from '../../../src/algorithms/rng.js';
import { makeSpan } from '../adapters/fixtures.js';

describe('placeholders', () => {
  it('finds f-string placeholders and ignores escaped braces', () => {
    expect([...extractPlaceholders('Hi {name}, {{literal}} {count:>3} {x!r}')]).toEqual(['name', 'count', 'x']);
  });

  it('rejects an edit that drops, renames or adds a placeholder', () => {
    expect(checkPlaceholders('Book for {request} in {rooms}', 'Better: {request}; rooms {rooms}').ok).toBe(true);
    expect(checkPlaceholders('Book for {request} in {rooms}', 'Book for {request}')).toMatchObject({
      ok: false,
      missing: ['rooms'],
    });
    expect(checkPlaceholders('{request}', '{req}')).toMatchObject({
      ok: false,
      missing: ['request'],
      unexpected: ['req'],
    });
  });

  it('formats like str.format', () => {
    expect(formatTemplate('{a} {{b}} {c}', { a: 'x', c: { k: 1 } })).toBe('x {b} {"k":1}');
    expect(() => formatTemplate('{a}', {})).toThrow(/no value/);
  });
});

describe('critique evidence', () => {
  const llmSpan = makeSpan({
    seq: 1,
    attributes: {
      prompt_token_ids: [1, 2, 3],
      response_token_ids: [4, 5],
      'rollgate.response.logprobs': [-0.1, -0.2],
      'logprobs.content': '[{"token":"a","logprob":-0.1}]',
      'rollgate.choices.1.token_ids': [9],
      'rollgate.request.overrides': '{"return_token_ids":null,"logprobs":null}',
      'agentlightning.rollout_id': 'ro-1',
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'x'.repeat(5000) }] }]),
      'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'Orion' }] }]),
    },
  });
  const result = (i: number): TaskResult => ({
    taskIndex: i,
    task: i,
    rolloutId: `ro-${i}`,
    status: 'succeeded',
    reward: 0,
    timedOut: false,
    spans: [llmSpan],
  });

  it('carries no token ids or logprobs and stays under the size cap', () => {
    const experiments = boundExperiments(
      [0, 1, 2, 3].map((i) => toExperiment(result(i))),
      4000,
    );
    const json = JSON.stringify(experiments);
    expect(json.length).toBeLessThanOrEqual(4000);
    expect(json).not.toMatch(/token_ids|logprobs|rollout_id/);
    expect(experiments[0]?.messages[0]?.messages.at(-1)?.content).toBe('Orion');
  });

  it('keeps small payloads whole', () => {
    const small = { ...result(0), spans: [] };
    expect(boundExperiments([toExperiment(small)], 4000)).toEqual([
      { status: 'succeeded', final_reward: 0, messages: [], spans: [] },
    ]);
  });

  it('builds every prompt variant with the template and the evidence', () => {
    const experiments = [toExperiment(result(0))];
    for (const v of GRADIENT_VARIANTS) {
      const text = v
        .build({ promptTemplate: 'T {x}', experiments })
        .map((m) => m.content)
        .join('\n');
      expect(text).toContain('T {x}');
      expect(text).not.toMatch(/token_ids|logprobs/);
    }
    for (const v of EDIT_VARIANTS) {
      const text = v
        .build({ promptTemplate: 'T {x}', critique: 'C' })
        .map((m) => m.content)
        .join('\n');
      expect(text).toContain('T {x}');
      expect(text).toContain('C');
    }
    expect(cleanEditedTemplate('```\nNew {x}\n```')).toBe('New {x}');
  });
});

describe('seeded batches', () => {
  it('yields distinct items per batch, the whole set when the batch is larger, identically per seed', () => {
    const items = [0, 1, 2, 3, 4, 5, 6, 7];
    const a = createBatchIterator(items, 4, createRng(1));
    const b = createBatchIterator(items, 4, createRng(1));
    const first = a.next();
    expect(new Set(first).size).toBe(4);
    expect(new Set([...first, ...a.next()])).toEqual(new Set(items));
    expect(b.next()).toEqual(first);
    expect([...createBatchIterator(items, 20, createRng(2)).next()].sort()).toEqual(items);
  });
});
