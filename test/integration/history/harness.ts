// A gateway with two pools on one engine twin in qwen3 mode: `as-sent` (chat calls go to the engine as sent) and
// `faithful` (history.mode "faithful"), plus readers for the rows, the ledger and the history attributes.
import OpenAI from 'openai';
import { spansToTrajectories, type TrajectoryRow } from '../../../src/adapters/trajectories.js';
import { spansToTriplets, type TokenTriplet } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
import { type ConfigOverrides, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { toolLoopModel } from '../../helpers/tool-agent.js';
import { type MockVllm, type MockVllmOptions, startEngineTwin } from '../../servers/mock-vllm.js';

export const AS_SENT = 'as-sent';
export const FAITHFUL = 'faithful';

type HistoryOverrides = Record<string, unknown>;

export interface HistoryHarness {
  readonly twin: MockVllm;
  readonly gw: TestGateway;
  /** An SDK client on the attributed base URL of rollout `rid` (attempt a1). */
  client(rid: string): OpenAI;
  spans(rid: string): Promise<Span[]>;
  rows(rid: string): Promise<TrajectoryRow[]>;
  triplets(rid: string): Promise<TokenTriplet[]>;
  close(): Promise<void>;
}

export async function startHistoryHarness(
  options: { twin?: MockVllmOptions; history?: HistoryOverrides; config?: ConfigOverrides } = {},
): Promise<HistoryHarness> {
  const twin = await startEngineTwin({
    tokenizer: 'qwen3',
    reasoning: true,
    respond: toolLoopModel(),
    ...options.twin,
  });
  let gw: TestGateway;
  try {
    gw = await startTestGateway({
      ...options.config,
      models: [
        { name: AS_SENT, upstreamModel: twin.model, backends: [{ url: twin.url }] },
        {
          name: FAITHFUL,
          upstreamModel: twin.model,
          backends: [{ url: twin.url }],
          history: { mode: 'faithful', family: 'qwen3', ...options.history },
        },
      ],
    });
  } catch (error) {
    await twin.close();
    throw error;
  }
  const spans = async (rid: string) => (await gw.gateway.store.querySpans(rid)).items;
  return {
    twin,
    gw,
    client: (rid) => new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent', maxRetries: 0 }),
    spans,
    rows: async (rid) =>
      spansToTrajectories(await spans(rid), { maxPromptLength: 1 << 20, maxResponseLength: 1 << 20 }),
    triplets: async (rid) => spansToTriplets(await spans(rid)),
    async close() {
      await gw.close();
      await twin.close();
    },
  };
}

/** The spans of chat calls of a faithful pool, in sequence order. */
export function historySpans(spans: readonly Span[]): Span[] {
  return spans
    .filter((s) => s.attributes[A.ATTR_HISTORY_STATUS] !== undefined)
    .sort((a, b) => a.sequence_id - b.sequence_id);
}
