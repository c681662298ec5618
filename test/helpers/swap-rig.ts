// A weight-swap rig over real sockets: an engine twin serving a LoRA adapter `policy`, a gateway whose pool of that
// name swaps in the given mode, the rl plugin's weight side attached to the gateway's trainer hub (so a trainer
// drives it over /v1/rl/weights*), and streaming openai-SDK agents that call until told to stop. Used by the swap
// tests and `npm run bench:swap`.
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { createAdminGatewayControl } from '../../src/algorithms/rl/admin-gateway-control.js';
import { buildBatch } from '../../src/algorithms/rl/batch.js';
import { rlOptionsSchema } from '../../src/algorithms/rl/options.js';
import { createWeightsPlugin } from '../../src/algorithms/rl/weights-plugin.js';
import * as A from '../../src/contracts/span-attributes.js';
import { silentLogger } from '../../src/logger.js';
import type { LightningStore, Rollout, Span } from '../../src/store/core/types.js';
import { type MockVllm, type MockVllmOptions, startEngineTwin, type TwinWeights } from '../servers/mock-vllm.js';
import { startTestGateway, type TestGateway } from './gateway.js';

export const SWAP_POOL = 'policy';

export interface SwapRigOptions {
  readonly mode: 'drain' | 'keep' | 'abort-resubmit';
  /**
   * The engine the twin plays (default vllm, serving the adapter `policy`). sglang: the twin speaks SGLang and the
   * trainer's weights are base weights loaded with SGLang's /update_weights_from_disk.
   */
  readonly engine?: 'vllm' | 'sglang';
  readonly twin?: MockVllmOptions;
  /** Characters (= tokens in the twin's chars mode) of every answer. */
  readonly answerTokens?: number;
  /** Seconds a prepared transfer waits for its commit. */
  readonly prepareDeadlineS?: number;
  readonly verifyVersion?: 'auto' | 'strict' | 'off';
  /** The fetch the weights plugin calls the backends with (a test records the dev routes it drives). */
  readonly engineFetch?: typeof fetch;
  /** Pool `swap` keys besides the mode (versioned adapters, pinning). */
  readonly swap?: Readonly<Record<string, unknown>>;
  /** The rl plugin's maxStaleness: with versioned adapters, maxStaleness + 1 versions stay loaded. */
  readonly maxStaleness?: number;
  /** Pool `health` keys (default: probes off), e.g. a progress-stall check that a long load could trip. */
  readonly health?: Readonly<Record<string, unknown>>;
}

export interface AgentRun {
  readonly rolloutIds: readonly string[];
  readonly failures: unknown[];
  /** finish_reason of every choice the agents got. */
  readonly finishReasons: string[];
  completed(): number;
  /** Resolves once `n` more calls completed. */
  waitForCalls(n: number): Promise<void>;
  /** How many agents' current streams have relayed at least `chunks` chunks of text or reasoning, now. */
  streamsPast(chunks: number): number;
  stop(): Promise<void>;
}

export interface StreamingAgentOptions {
  readonly maxTokens?: number;
  readonly api?: 'chat' | 'completions';
  /** The pool the agents call (default SWAP_POOL). */
  readonly model?: string;
  /** Keys added to every request (e.g. vLLM's `ignore_eos`, a temperature). */
  readonly extraBody?: Readonly<Record<string, unknown>>;
  readonly dispatcher?: Agent;
  /** The SDK's retries (default its own, 2); 0 lets every failed call reach the test. */
  readonly maxRetries?: number;
}

/**
 * Streaming openai-SDK agents (one rollout each) on a gateway, calling one after another until stopped. Text and reasoning both count as an answer (vLLM 0.32's
 * qwen3 reasoning parser puts an answer without `</think>` in `reasoning`; earlier releases in `reasoning_content`).
 */
export function runStreamingAgents(gatewayUrl: string, count: number, options: StreamingAgentOptions = {}): AgentRun {
  let stopped = false;
  let completed = 0;
  const failures: unknown[] = [];
  const finishReasons: string[] = [];
  const chunksNow = new Array<number>(count).fill(0);
  const waiters = new Set<() => void>();
  const model = options.model ?? SWAP_POOL;
  const dispatcher = options.dispatcher;
  const agentFetch = dispatcher
    ? (((url: string, init?: Record<string, unknown>) =>
        undiciFetch(url, { ...init, dispatcher })) as unknown as typeof fetch)
    : undefined;
  const rolloutIds = Array.from({ length: count }, (_, i) => `swap-${process.pid}-${Date.now()}-${i}`);
  const loops = rolloutIds.map(async (rid, i) => {
    const client = new OpenAI({
      baseURL: `${gatewayUrl}/rollout/${rid}/attempt/a1/v1`,
      apiKey: 'agent',
      ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
      ...(agentFetch ? { fetch: agentFetch } : {}),
    });
    const extra = options.extraBody ?? {};
    const maxTokens = options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens };
    for (let turn = 0; !stopped; turn++) {
      chunksNow[i] = 0;
      const took = (piece: unknown) => {
        if (typeof piece === 'string' && piece.length > 0) chunksNow[i] = (chunksNow[i] ?? 0) + 1;
      };
      try {
        let text = '';
        if (options.api === 'completions') {
          // The completions API's default max_tokens is 16: the agents ask for room for the whole answer.
          const stream = await client.completions.create({
            model,
            prompt: `${rid} turn ${turn}`,
            stream: true,
            max_tokens: 4096,
            ...maxTokens,
            ...extra,
          });
          for await (const chunk of stream) {
            const piece = chunk.choices[0]?.text ?? '';
            text += piece;
            took(piece);
            const reason = chunk.choices[0]?.finish_reason;
            if (reason) finishReasons.push(reason);
          }
        } else {
          const stream = await client.chat.completions.create({
            model,
            messages: [{ role: 'user', content: `${rid} turn ${turn}` }],
            stream: true,
            ...maxTokens,
            ...extra,
          });
          for await (const chunk of stream) {
            const delta = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
            for (const piece of [delta?.content, delta?.reasoning, delta?.reasoning_content]) {
              if (typeof piece === 'string') text += piece;
              took(piece);
            }
            const reason = chunk.choices[0]?.finish_reason;
            if (reason) finishReasons.push(reason);
          }
        }
        if (text.length === 0) throw new Error('empty answer');
        completed += 1;
        for (const w of [...waiters]) w();
      } catch (error) {
        failures.push(error);
      }
    }
  });
  return {
    rolloutIds,
    failures,
    finishReasons,
    completed: () => completed,
    waitForCalls: (n) => {
      const target = completed + n;
      return new Promise<void>((resolve) => {
        const check = () => {
          if (completed < target) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
    streamsPast: (chunks) => chunksNow.filter((n) => n >= chunks).length,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** The version a twin weight set stands for: the adapter's version (1 after the first load). */
export function weightsVersion(weights: TwinWeights): number {
  return weights.lora?.version ?? 0;
}

/**
 * The rl plugin's weight side attached to a gateway's trainer hub for the pool `model` (default SWAP_POOL), so a
 * trainer swaps weights over /v1/rl/weights*. Returns the detach function.
 */
export function attachWeightsPlugin(
  gw: TestGateway,
  options: {
    readonly model?: string;
    readonly weightLoad?: Readonly<Record<string, unknown>>;
    readonly engineFetch?: typeof fetch;
    readonly prepareDeadlineS?: number;
    readonly maxStaleness?: number;
  } = {},
): () => void {
  const model = options.model ?? SWAP_POOL;
  let version = 1;
  const rl = rlOptionsSchema.parse({
    model,
    ...(options.weightLoad === undefined ? {} : { weightLoad: options.weightLoad }),
  });
  const hub = gw.gateway.rlHub;
  return hub.attach({
    currentVersion: () => version,
    onAcknowledged: () => undefined,
    ...createWeightsPlugin({
      hub,
      control: createAdminGatewayControl({ gatewayUrl: gw.url }),
      model,
      hook: rl.weightLoad,
      logger: silentLogger,
      ...(options.engineFetch ? { fetch: options.engineFetch } : {}),
      prepareDeadlineS: options.prepareDeadlineS ?? rl.prepareDeadlineS,
      keepAdapterVersions: (options.maxStaleness ?? 0) + 1,
      onSwapped: (report) => {
        version = report.version;
      },
    }),
  });
}

/** SGLang's full-weights load from a checkpoint directory, labelled with the trainer's version. */
const SGLANG_DISK_LOAD = {
  type: 'http',
  base: 'server',
  path: '/update_weights_from_disk',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the weight-load hook's placeholder syntax
  body: { model_path: '${lora_path}', weight_version: 'v${version}' },
} as const;

export class SwapRig {
  readonly #agentPool = new Agent({ connections: 128 });
  #detach: () => void = () => undefined;

  private constructor(
    readonly twin: MockVllm,
    readonly gw: TestGateway,
  ) {}

  static async start(options: SwapRigOptions): Promise<SwapRig> {
    const answer = 'x'.repeat(options.answerTokens ?? 40);
    const engine = options.engine ?? 'vllm';
    const twin = await startEngineTwin({
      model: 'base',
      interTokenMs: 8,
      ttftMs: 5,
      respond: () => answer,
      dialect: engine,
      ...options.twin,
    });
    let gw: TestGateway | undefined;
    try {
      if (engine === 'vllm') {
        // Versioned adapters: version 1 is loaded under its own name, as an operator starts such a pool.
        const name = options.swap?.adapters === 'versioned' ? `${SWAP_POOL}-v1` : SWAP_POOL;
        await twinPost(twin, '/v1/load_lora_adapter', { lora_name: name, lora_path: '/ckpt/1' });
      }
      gw = await startTestGateway({
        models: [
          {
            name: SWAP_POOL,
            upstreamModel: SWAP_POOL,
            version: 1,
            backends: [{ url: twin.url, type: engine }],
            health: { intervalMs: 0, ...options.health },
            swap: { mode: options.mode, verifyVersion: options.verifyVersion ?? 'auto', ...options.swap },
          },
        ],
        // Calls that arrive during a swap wait for it instead of being refused.
        pause: { mode: 'hold' },
      });
      const rig = new SwapRig(twin, gw);
      rig.#detach = attachWeightsPlugin(gw, {
        ...(engine === 'sglang' ? { weightLoad: SGLANG_DISK_LOAD } : {}),
        ...(options.engineFetch ? { engineFetch: options.engineFetch } : {}),
        ...(options.prepareDeadlineS === undefined ? {} : { prepareDeadlineS: options.prepareDeadlineS }),
        ...(options.maxStaleness === undefined ? {} : { maxStaleness: options.maxStaleness }),
      });
      return rig;
    } catch (error) {
      await gw?.close();
      await twin.close();
      throw error;
    }
  }

  /** POST to the gateway; the status and the parsed JSON answer. */
  async post(path: string, body: unknown = {}): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(this.gw.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** An openai-SDK agent of one rollout; no SDK retries, so a failed call reaches the test as it happened. */
  agent(rolloutId: string): OpenAI {
    return new OpenAI({ baseURL: `${this.gw.url}/rollout/${rolloutId}/attempt/a1/v1`, apiKey: 'agent', maxRetries: 0 });
  }

  /** `count` streaming agents started and each of their first streams a few tokens in: the moment to swap. */
  async agentsMidGeneration(count: number): Promise<AgentRun> {
    const agents = this.runAgents(count);
    await agents.waitForCalls(count);
    await this.waitForMidGeneration(count, 5);
    return agents;
  }

  /** Streaming agents (one rollout each) calling one after another until stopped. */
  runAgents(count: number, options: StreamingAgentOptions = {}): AgentRun {
    return runStreamingAgents(this.gw.url, count, { ...options, dispatcher: this.#agentPool });
  }

  /**
   * Resolves once `count` of the twin's streams are generating and have generated at least `tokens` tokens each
   * (generated, not sent: SGLang's chat streams carry no token ids for the twin to count).
   */
  async waitForMidGeneration(count: number, tokens: number): Promise<void> {
    const midway = () =>
      this.twin.requests.filter(
        (q) =>
          q.stream === true && q.completedAt === undefined && q.abortedAt === undefined && q.tokensGenerated >= tokens,
      ).length >= count;
    await this.twin.waitFor(midway, 10_000);
  }

  async spans(rolloutIds: readonly string[]): Promise<Span[]> {
    const all: Span[] = [];
    for (const rid of rolloutIds) all.push(...(await this.gw.gateway.store.querySpans(rid)).items);
    return all;
  }

  async close(): Promise<void> {
    this.#detach();
    await this.#agentPool.destroy();
    await this.gw.close();
    await this.twin.close();
  }
}

/** The version of each response token a span claims: its segments, or its one version for every token. */
export function spanTokenVersions(span: Span): number[] {
  const ids = span.attributes[A.ATTR_RESPONSE_TOKEN_IDS];
  const length = Array.isArray(ids) ? ids.length : 0;
  const raw = span.attributes[A.ATTR_MODEL_VERSION_SEGMENTS];
  if (typeof raw === 'string') {
    const out: number[] = [];
    for (const [start, end, version] of JSON.parse(raw) as Array<[number, number, number]>) {
      for (let i = start; i < end; i++) out.push(version);
    }
    return out;
  }
  return new Array<number>(length).fill(Number(span.attributes[A.ATTR_MODEL_VERSION]));
}

export async function twinPost(twin: MockVllm, path: string, body: unknown = {}): Promise<void> {
  const response = await fetch(twin.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
}

/**
 * The RL batch (transition level, reinforce, no std normalisation) over `rolloutIds`, each taken as succeeded: what
 * the swap tests train on, with the staleness they allow.
 */
export async function swapBatch(
  store: LightningStore,
  rolloutIds: readonly string[],
  options: { readonly currentVersion: number; readonly maxStaleness?: number; readonly staleTokens?: 'drop' | 'mask' },
) {
  const finished = new Map<string, Rollout>();
  for (const rid of rolloutIds) {
    const rollout = await store.getRolloutById(rid);
    if (rollout) finished.set(rid, { ...rollout, status: 'succeeded' });
  }
  return buildBatch({
    store,
    batchId: 'b',
    step: 0,
    rollouts: rolloutIds.map((rolloutId) => ({ rolloutId, groupId: 'g' })),
    finished,
    currentVersion: options.currentVersion,
    maxStaleness: options.maxStaleness ?? 0,
    ...(options.staleTokens === undefined ? {} : { staleTokens: options.staleTokens }),
    estimator: 'reinforce',
    normalizeStd: false,
    level: 'transition',
    maxPromptLength: 4096,
    maxResponseLength: 4096,
    rewardFillna: 1,
  });
}
