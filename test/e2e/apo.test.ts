// End to end: APO lifts the room-booking prompt to the best reachable score within 3 rounds, through the
// real gateway (OpenAI routes + store API), the in-process runner SDK running an openai-SDK agent, and the
// store. The agent model answers right only when the prompt states the rules a task needs; the optimizer
// model proposes edits from critiques (test/servers/apo-models.ts).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROMPT_RESOURCE_NAME, RULES, roomAgent, SEED_PROMPT } from '../../examples/apo-room-booking/room-booking.js';
import { spansToTriplets } from '../../src/adapters/triplets.js';
import { createStoreOnlyGatewayControl } from '../../src/algorithms/gateway-control.js';
import { startAlgorithms } from '../../src/algorithms/start.js';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import type { JsonObject, Span } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type StandInModel, startOptimizerModel, startRoomModel } from '../servers/apo-models.js';

const EXAMPLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../examples/apo-room-booking');
const MODEL = 'room-model';

interface ApoResult extends JsonObject {
  seed_prompt: { score: number };
  best: { version: string; score: number; template: string; resources_id: string };
  candidates: Array<{ version: string; parent: string | null; resources_id: string; round: number }>;
  rounds: Array<{ round: number; best_score: number }>;
  published_resources_id: string;
}

describe('APO on the room-booking example', () => {
  let agentModel: StandInModel;
  let optimizer: StandInModel;
  let gw: TestGateway;
  let runner: Runner;
  let reportDir: string;
  let agentCalls = 0;

  beforeAll(async () => {
    [agentModel, optimizer] = await Promise.all([startRoomModel(), startOptimizerModel()]);
    gw = await startTestGateway({
      // vllm: the gateway asks for token ids and logprobs, so spans carry what critiques must never see.
      models: [
        {
          name: MODEL,
          backends: [{ url: agentModel.url, type: 'vllm' }],
          logprobs: 'always',
          health: { intervalMs: 0 },
        },
      ],
    });
    runner = createRunner({
      store: gw.gateway.store,
      gatewayUrl: gw.url,
      agent: roomAgent({ model: MODEL, onCall: () => agentCalls++ }),
      concurrency: 16,
      backoff: { initialMs: 5, maxMs: 20 },
      logger: silentLogger,
    });
    reportDir = await mkdtemp(join(tmpdir(), 'rollgate-apo-e2e-'));
  });

  afterAll(async () => {
    await runner?.close({ graceMs: 0 });
    await gw?.close();
    await Promise.all([agentModel?.close(), optimizer?.close()]);
    if (reportDir) await rm(reportDir, { recursive: true, force: true });
  });

  // Generous limit: ~110 rollouts on a shared 2-core CI box.
  it('improves the seed prompt to the best score, with lineage and a span for every call', {
    timeout: 120_000,
  }, async () => {
    const store = gw.gateway.store;
    const handle = startAlgorithms(
      [
        {
          use: 'apo',
          options: {
            optimizer: {
              baseUrl: optimizer.url,
              apiKey: 'stand-in',
              gradientModel: 'critic',
              applyEditModel: 'editor',
            },
            seedPrompt: SEED_PROMPT,
            promptResourceName: PROMPT_RESOURCE_NAME,
            beamRounds: 3,
            beamWidth: 2,
            branchFactor: 2,
            gradientBatchSize: 4,
            valBatchSize: 4,
            rolloutBatchTimeoutS: 60,
            seed: 1,
          },
          data: { train: 'train.jsonl', val: 'val.jsonl' },
        },
      ],
      {
        store,
        gateway: createStoreOnlyGatewayControl({ gatewayUrl: gw.url }),
        logger: silentLogger,
        baseDir: EXAMPLE_DIR,
        reportDir,
        progressOutput: { write: () => true },
      },
    );
    const [outcome] = await handle.done;
    await handle.close();
    expect(outcome?.error).toBeNull();
    expect(outcome?.status).toBe('succeeded');
    const report = JSON.parse(await readFile(outcome?.reportPath ?? '', 'utf8')) as { result: ApoResult };
    const result = report.result;

    // Improvement: from the seed's score to the best reachable one, within 3 rounds.
    expect(result.seed_prompt.score).toBeLessThan(0.5);
    expect(result.best.score).toBe(1);
    for (const rule of Object.values(RULES)) expect(result.best.template).toContain(rule);
    expect(result.rounds.length).toBeLessThanOrEqual(3);

    // Lineage: the best descends from the seed; every stored candidate names its parent.
    const byVersion = new Map(result.candidates.map((c) => [c.version, c]));
    const chain: string[] = [];
    for (let v: string | null = result.best.version; v !== null; v = byVersion.get(v)?.parent ?? null) chain.push(v);
    expect(chain.at(-1)).toBe('v0');
    expect(chain.length).toBeGreaterThan(1);
    for (const c of result.candidates) {
      const stored = await store.getResourcesById(c.resources_id);
      const meta = (stored?.resources[PROMPT_RESOURCE_NAME] as { metadata?: JsonObject } | undefined)?.metadata;
      expect(meta?.parent_version ?? null).toBe(c.parent);
    }
    const latest = await store.getLatestResources();
    expect(latest?.resources_id).toBe(result.published_resources_id);

    // Every LLM call the agents made went through the gateway and has a span in its rollout.
    const rollouts = (await store.queryRollouts({ status_in: ['succeeded'] })).items;
    const spans: Span[] = [];
    for (const r of rollouts) spans.push(...(await store.querySpans(r.rollout_id)).items);
    const llmSpans = spans.filter((s) => s.name.startsWith('chat '));
    expect(agentCalls).toBeGreaterThan(0);
    expect(llmSpans).toHaveLength(agentCalls);
    // Equal without the gateway's response cache; with it, repeated temperature-0 calls never reach the model.
    expect(agentModel.calls()).toBeLessThanOrEqual(agentCalls);
    for (const r of rollouts) {
      expect(llmSpans.filter((s) => s.rollout_id === r.rollout_id).length).toBeGreaterThanOrEqual(1);
    }
    // The adapters read the gateway's real spans: one trainable triplet per rollout, rewarded by the agent.
    for (const r of rollouts.slice(0, 10)) {
      const triplets = spansToTriplets(spans.filter((s) => s.rollout_id === r.rollout_id));
      expect(triplets).toHaveLength(1);
      expect([0, 1]).toContain(triplets[0]?.reward);
      expect(triplets[0]?.response.logprobs).toHaveLength(triplets[0]?.response.token_ids.length ?? -1);
    }

    // Critique prompts carried chat messages but no token ids or logprobs, under the size cap.
    expect(optimizer.calls()).toBeGreaterThan(0);
    const critiques = optimizer.bodies().filter((b) => !b.includes('Revise'));
    expect(critiques.some((b) => b.includes('Meeting:'))).toBe(true);
    for (const body of optimizer.bodies()) {
      expect(body).not.toMatch(/token_ids|logprobs/);
      expect(body.length).toBeLessThan(16_000 * 2 + 8_000);
    }
  });
});
