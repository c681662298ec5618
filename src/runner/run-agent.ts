// The in-process SDK entry point: run an async agent function against a gateway's queue.
//
//   const stats = await runAgent(async (task, ctx) => { ...; return reward; }, { gatewayUrl, concurrency: 4 });
//
// Without a `store`, it talks to the gateway's store API (`/v1/agl/*`) and closes that client when done.

import { HttpStore } from '../store/client/http.js';
import type { LightningStore } from '../store/core/types.js';
import { createAgentTokenMinter } from './agent-tokens.js';
import { createRunner, type RunnerOptions } from './runner.js';
import type { AgentFunction, RunnerStats } from './types.js';

export interface RunAgentOptions extends Omit<RunnerOptions, 'agent' | 'executor' | 'store'> {
  /** Defaults to a store API client for `gatewayUrl`. */
  readonly store?: LightningStore;
  /**
   * Runner (or admin) key for the gateway: used by the store API client the runner builds, and (unless `agentKey`
   * is given) to mint each attempt a short-lived token bound to it (docs/security.md). Never given to the agent.
   */
  readonly apiKey?: string;
}

/** Runs until `signal` aborts (or, with `exitWhenIdle`, until the queue is empty); resolves with the counters. */
export async function runAgent(agent: AgentFunction, options: RunAgentOptions): Promise<RunnerStats> {
  const { store: given, apiKey, ...runnerOptions } = options;
  const store = given ?? new HttpStore({ baseUrl: options.gatewayUrl, ...(apiKey !== undefined ? { apiKey } : {}) });
  try {
    const agentKey =
      runnerOptions.agentKey ??
      (apiKey !== undefined
        ? createAgentTokenMinter({ gatewayUrl: options.gatewayUrl, apiKey, fetch: options.fetch })
        : null);
    return await createRunner({ ...runnerOptions, agentKey, store, agent }).done;
  } finally {
    if (given === undefined) await store.close();
  }
}
