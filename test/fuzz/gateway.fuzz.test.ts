// Seeded fuzzing of every route family (docs/testing-faults.md): a few hundred mutated requests per family against
// a real gateway in front of the engine twin. No 5xx for the caller's mistake, no hang, errors in the API's shape,
// and the store still records correctly afterwards. ROLLGATE_FUZZ_SEED / ROLLGATE_FUZZ_CASES explore further.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAMILIES } from './families.js';
import { chatStillWorks, type FuzzRig, fuzzFamily, fuzzSettings, startFuzzRig, storeStillWorks } from './harness.js';

const { seed, cases } = fuzzSettings();
/** Families that go through a model pool also prove the proxy path still answers afterwards. */
const PROXY_FAMILIES = new Set([
  'openai-chat',
  'openai-completions',
  'openai-responses',
  'anthropic-messages',
  'agl-v1',
]);

describe(`fuzz (ROLLGATE_FUZZ_SEED=${seed} ROLLGATE_FUZZ_CASES=${cases})`, () => {
  FAMILIES.forEach((family, index) => {
    describe(family.name, () => {
      let rig: FuzzRig;
      beforeAll(async () => {
        rig = await startFuzzRig();
      });
      afterAll(async () => {
        await rig?.close();
      });

      it(`${cases} mutated requests: no 5xx, no hang, shaped errors, store intact`, async () => {
        // Each family gets its own stream from the one seed, so adding a family does not reshuffle the others.
        const familySeed = (seed + index * 7919) >>> 0;
        const result = await fuzzFamily({ ctx: rig.ctx, family, seed: familySeed, cases });
        const report = result.failures
          .slice(0, 10)
          .map((f) => `#${f.case} ${f.request}\n    -> ${f.problem}`)
          .join('\n');
        expect(
          result.failures,
          `ROLLGATE_FUZZ_SEED=${seed} family ${family.name} (stream seed ${familySeed}): ${result.failures.length} failing cases\n${report}`,
        ).toEqual([]);
        // A suite whose mutations never get past validation proves little: some cases must be accepted.
        const accepted = Object.entries(result.statuses)
          .filter(([status]) => Number(status) < 300)
          .reduce((n, [, count]) => n + count, 0);
        expect(accepted, `statuses ${JSON.stringify(result.statuses)}`).toBeGreaterThan(0);
        expect(await storeStillWorks(rig.ctx, `${family.name}-${seed}`)).toBeNull();
        if (PROXY_FAMILIES.has(family.name)) expect(await chatStillWorks(rig.ctx)).toBeNull();
      }, 60_000);
    });
  });
});
