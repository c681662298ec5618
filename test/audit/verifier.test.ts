// The audit's verifier must be able to fail: a true sample recorded through the gateway passes, and every way of
// corrupting it (an id, a mask bit, a logprob, the version, a missing or extra token, the prompt, a wrong drop
// report) is caught with a message that says what differs from the engine's ledger.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chatAgent } from './agents.js';
import { type AttemptHandle, AuditRig, POLICY } from './rig.js';
import {
  type AuditSample,
  type AuditWorld,
  auditReader,
  batchAuditSample,
  callTruths,
  verifySample,
} from './verifier.js';

let rig: AuditRig;
let attempt: AttemptHandle;
let world: AuditWorld;
let sample: AuditSample;

beforeAll(async () => {
  rig = await AuditRig.start();
  attempt = await rig.attempt();
  await chatAgent(attempt.client, {
    model: POLICY,
    stream: true,
    question: `Define "moss". (${attempt.rolloutId})`,
    turns: 3,
  });
  await rig.finish(attempt);
  const report = await rig.audit([attempt], await rig.metrics());
  expect(report.problems).toEqual([]);
  world = await rig.world([attempt]);
  const [s] = report.batch.samples;
  if (!s) throw new Error('no sample recorded');
  sample = batchAuditSample(s);
});
afterAll(async () => {
  await rig?.close();
});

function firstIndex(mask: readonly number[], value: number): number {
  const i = mask.indexOf(value);
  if (i < 0) throw new Error(`no mask ${value} in the sample`);
  return i;
}

function withAt<T>(list: readonly T[], index: number, value: T): T[] {
  const copy = [...list];
  copy[index] = value;
  return copy;
}

it('passes the true sample, a merged row with masked gaps', () => {
  expect(sample.sequenceIds.length).toBeGreaterThan(1);
  expect(sample.responseMask).toContain(0);
  expect(verifySample(world, sample)).toEqual([]);
});

it.each([
  [
    'a generated id',
    (s: AuditSample) => ({ ...s, responseIds: withAt(s.responseIds, 0, (s.responseIds[0] ?? 0) + 1) }),
    /the engine generated/,
  ],
  [
    'a generated token masked out',
    (s: AuditSample) => ({ ...s, responseMask: withAt(s.responseMask, 0, 0) }),
    /has mask 0/,
  ],
  [
    'a gap token trained on',
    (s: AuditSample) => ({ ...s, responseMask: withAt(s.responseMask, firstIndex(s.responseMask, 0), 1) }),
    /has mask 1/,
  ],
  [
    'a logprob',
    (s: AuditSample) => ({ ...s, logprobs: withAt(s.logprobs ?? [], 1, (s.logprobs?.[1] ?? 0) - 1e-3) }),
    /logprob of token 1/,
  ],
  ['the model version', (s: AuditSample) => ({ ...s, modelVersion: (s.modelVersion ?? 0) + 1 }), /model_version/],
  [
    'a missing last token',
    (s: AuditSample) => ({
      ...s,
      responseIds: s.responseIds.slice(0, -1),
      responseMask: s.responseMask.slice(0, -1),
      logprobs: s.logprobs?.slice(0, -1) ?? null,
    }),
    /the row ends/,
  ],
  [
    'an extra token',
    (s: AuditSample) => ({
      ...s,
      responseIds: [...s.responseIds, 13],
      responseMask: [...s.responseMask, 1],
      logprobs: s.logprobs ? [...s.logprobs, -0.5] : null,
    }),
    /after the last call's generation/,
  ],
  [
    'the prompt',
    (s: AuditSample) => ({ ...s, promptIds: withAt(s.promptIds, 3, (s.promptIds[3] ?? 0) + 1) }),
    /prompt ids differ/,
  ],
  ['a dropped call', (s: AuditSample) => ({ ...s, sequenceIds: s.sequenceIds.slice(1) }), /prompt ids differ/],
])('catches %s', (_what, corrupt, message) => {
  const problems = verifySample(world, corrupt(sample));
  expect(problems.length).toBeGreaterThan(0);
  expect(problems.join('\n')).toMatch(message);
});

it('catches tokens computed by other weights than the span says', () => {
  const problems = verifySample({ ...world, versionOf: (w) => (w.lora?.version ?? 0) + 1 }, sample);
  expect(problems.join('\n')).toMatch(/computed by version 2, the span says 1/);
});

it('catches a trainable call reported as left out, and one missing from the samples', () => {
  const [first] = callTruths(world, attempt.rolloutId);
  if (!first) throw new Error('no call');
  const drop = { rolloutId: attempt.rolloutId, sequenceId: first.span.sequence_id, reason: 'incomplete_token_ids' };
  expect(auditReader(world, { samples: [sample], drops: [] })).toEqual([]);
  expect(auditReader(world, { samples: [sample], drops: [drop] }).join('\n')).toMatch(
    /reported \["incomplete_token_ids"\], the ledger says \[\]/,
  );
  expect(auditReader(world, { samples: [], drops: [] }).join('\n')).toMatch(/missing from the samples/);
});
