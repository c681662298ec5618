// APO beam search with a stand-in worker and optimizer: improvement, lineage, namespaced resources that
// never become "latest" mid-run (57), concurrent candidate evaluation (56), rejected placeholder edits (59),
// seeded replay.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAlgorithm } from '../../../src/algorithms/apo/index.js';
import type { OptimizerClient } from '../../../src/algorithms/apo/optimizer.js';
import { createProgressReporter } from '../../../src/algorithms/progress.js';
import type { AlgorithmContext } from '../../../src/algorithms/types.js';
import { silentLogger } from '../../../src/logger.js';
import type { JsonObject, JsonValue, NamedResources } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { tempFilePath } from '../../helpers/temp-path.js';
import { type FakeHandler, withFakeWorker } from './fake-worker.js';

const RULES = ['alpha', 'beta', 'gamma'];
const SEED = 'Solve {task}.';

/** Task i needs the first (i % 3) + 1 rules; reward 1 when the template mentions all of them. */
const tasks: JsonValue[] = Array.from({ length: 6 }, (_, i) => ({ id: i, needs: RULES.slice(0, (i % 3) + 1) }));

function templateOf(resources: NamedResources | null): string {
  const p = resources?.prompt as { template?: string } | undefined;
  return p?.template ?? '';
}

const solve: FakeHandler = (task, resources) => {
  const template = templateOf(resources);
  return (task as { needs: string[] }).needs.every((r) => template.includes(`rule-${r}`)) ? 1 : 0;
};

/** Critique names the first missing rule; the edit appends it. Edit call #2 drops the placeholder. */
function fakeOptimizer(): OptimizerClient & { edits: number } {
  const state = { edits: 0 };
  return {
    get edits() {
      return state.edits;
    },
    async complete({ messages }) {
      const text = messages.map((m) => m.content).join('\n');
      const template = /<<<\n([\s\S]*?)\n>>>/.exec(text)?.[1] ?? '';
      if (/critique/i.test(messages[0]?.content ?? '') || /CRITIQUE:|Critique:\n<<</.test(text)) {
        state.edits++;
        const rule = /add rule-(\w+)/.exec(text)?.[1];
        if (state.edits === 2) return 'Solve the task.'; // drops {task}
        return rule ? `${template} Use rule-${rule}.` : template;
      }
      const missing = RULES.find((r) => !template.includes(`rule-${r}`));
      return missing ? `- add rule-${missing}` : '';
    },
  };
}

function context(store: AlgorithmContext['store'], signal = new AbortController().signal): AlgorithmContext {
  return {
    store,
    gateway: { attemptBaseUrl: () => null },
    datasets: { train: tasks, val: tasks },
    logger: silentLogger,
    progress: createProgressReporter({ output: { write: () => true }, name: 'apo', isTTY: false }),
    signal,
    reportPath: tempFilePath('report.json'),
  };
}

const options = {
  seedPrompt: SEED,
  promptResourceName: 'prompt',
  beamRounds: 3,
  beamWidth: 2,
  branchFactor: 2,
  gradientBatchSize: 3,
  valBatchSize: 6,
  seed: 7,
  rolloutBatchTimeoutS: 10,
};

describe('apo beam search', () => {
  let inner: MemoryStore;
  beforeEach(() => {
    inner = new MemoryStore();
  });
  afterEach(async () => {
    await inner.close();
  });

  it('lifts the score, keeps lineage, never moves "latest" mid-run, and publishes the best at the end', async () => {
    const userResources = await inner.addResources({
      llm: { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' },
    });
    const unpinned: Array<string | null> = [];
    const latestSeen: Array<string | undefined> = [];
    const pinned: Array<string | null> = [];
    const worker = withFakeWorker(inner, async (task, resources, rollout) => {
      if (task === 'someone else') return 0;
      pinned.push(rollout.resources_id);
      // Leader/seed validations run while no candidate write is in flight: a deterministic checkpoint.
      if (rollout.metadata?.purpose === 'full_val' && (task as { id: number }).id === 0) {
        latestSeen.push((await inner.getLatestResources())?.resources_id);
        unpinned.push((await inner.enqueueRollout({ input: 'someone else' })).resources_id);
      }
      return solve(task, resources, rollout);
    });
    const optimizer = fakeOptimizer();
    const result = (await createAlgorithm(options, { optimizer, runId: 'apo-test' }).run(
      context(worker.store),
    )) as JsonObject & {
      seed_prompt: { score: number };
      best: { version: string; score: number; template: string };
      candidates: Array<{ version: string; parent: string | null; resources_id: string; template: string }>;
      rounds: Array<{ rejected: { placeholder: number } }>;
      published_resources_id: string;
    };

    expect(pinned.every((id) => id !== null && /^apo-test-v\d+$/.test(id))).toBe(true);
    expect(result.seed_prompt.score).toBe(0);
    expect(result.best.score).toBe(1);
    for (const rule of RULES) expect(result.best.template).toContain(`rule-${rule}`);
    expect(result.best.template).toContain('{task}');

    // Lineage: the best descends from the seed through one edit per round.
    const byVersion = new Map(result.candidates.map((c) => [c.version, c]));
    const chain: string[] = [];
    for (let v: string | null = result.best.version; v !== null; v = byVersion.get(v)?.parent ?? null) chain.push(v);
    expect(chain.at(-1)).toBe('v0');
    expect(chain).toHaveLength(4);
    const stored = await inner.getResourcesById(byVersion.get(result.best.version)?.resources_id ?? '');
    const meta = (stored?.resources.prompt as { metadata?: JsonObject } | undefined)?.metadata;
    expect(meta).toMatchObject({ apo_run_id: 'apo-test', parent_version: chain[1] });
    expect(meta?.critique).toMatch(/add rule-/);
    expect(meta?.scores).toHaveProperty('full_val', 1);
    expect(stored?.resources.llm).toEqual(userResources.resources.llm);

    // The placeholder-dropping edit was rejected before any evaluation.
    expect(result.rounds.reduce((n, r) => n + r.rejected.placeholder, 0)).toBe(1);
    expect(result.candidates.every((c) => c.template.includes('{task}'))).toBe(true);

    // Mid-run, "latest" stayed the user's snapshot; at the end it is the published best.
    expect(latestSeen.length).toBeGreaterThan(1);
    expect(new Set(latestSeen)).toEqual(new Set([userResources.resources_id]));
    expect(new Set(unpinned)).toEqual(new Set([userResources.resources_id]));
    const latest = await inner.getLatestResources();
    expect(latest?.resources_id).toBe(result.published_resources_id);
    expect(templateOf(latest?.resources ?? null)).toBe(result.best.template);
  });

  it('evaluates the candidates of a round concurrently', async () => {
    let running = 0;
    let peak = 0;
    const worker = withFakeWorker(inner, async (task, resources, rollout) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return solve(task, resources, rollout);
    });
    await createAlgorithm({ ...options, beamRounds: 1 }, { optimizer: fakeOptimizer(), runId: 'apo-c' }).run(
      context(worker.store),
    );
    // A round scores up to 2 beam + 4 new candidates on 6 tasks each: far above one batch at a time.
    expect(peak).toBeGreaterThan(6);
  });

  it('replays identically with the same seed', async () => {
    const run = async (runId: string) => {
      const store = new MemoryStore();
      try {
        const worker = withFakeWorker(store, solve);
        const r = (await createAlgorithm(options, { optimizer: fakeOptimizer(), runId }).run(
          context(worker.store),
        )) as { candidates: Array<{ template: string; parent: string | null }> };
        return r.candidates.map((c) => [c.template, c.parent]);
      } finally {
        await store.close();
      }
    };
    expect(await run('apo-a')).toEqual(await run('apo-b'));
  });

  it('counts rollouts that hang as 0, reports them and cancels them (56)', async () => {
    const worker = withFakeWorker(inner, (task, resources, rollout) =>
      (task as { id: number }).id === 5 ? 'hang' : solve(task, resources, rollout),
    );
    const result = (await createAlgorithm(
      { ...options, beamRounds: 1, rolloutBatchTimeoutS: 0.3 },
      { optimizer: fakeOptimizer(), runId: 'apo-t' },
    ).run(context(worker.store))) as { rollouts: { timed_out: number; timeout_policy: string } };
    expect(result.rollouts.timed_out).toBeGreaterThan(0);
    expect(result.rollouts.timeout_policy).toBe('zero');
    const rollouts = (await inner.queryRollouts()).items;
    const hung = rollouts.filter((r) => (r.input as { id: number }).id === 5);
    expect(hung.length).toBeGreaterThan(0);
    expect(hung.every((r) => r.status === 'cancelled')).toBe(true);
    expect(rollouts.every((r) => ['succeeded', 'cancelled'].includes(r.status))).toBe(true);
  });

  it('stops cleanly on abort and cancels its rollouts', async () => {
    const controller = new AbortController();
    const worker = withFakeWorker(inner, () => {
      controller.abort();
      return 'hang';
    });
    await expect(
      createAlgorithm(options, { optimizer: fakeOptimizer(), runId: 'apo-x' }).run(
        context(worker.store, controller.signal),
      ),
    ).rejects.toThrow(/aborted/);
    const rollouts = await inner.queryRollouts();
    expect(rollouts.items.every((r) => r.status === 'cancelled')).toBe(true);
  });
});
