// The model list of agent-lightning v1 (`/api/models`): what a v1 trainer registered, by model and endpoint. A
// registration for a model rollgate serves swaps that pool's backends for the registered endpoints in one atomic
// replace, so no call finds the pool without backends while a trainer moves it (docs/weight-swaps.md); spans carry
// the version. Models rollgate does not serve are only listed.
import type { PoolRegistry } from '../gateway/pools/model-pool.js';

export interface V1Model {
  model: string;
  endpoint: string;
  version: number;
}

export type V1Pools = Pick<PoolRegistry, 'snapshot' | 'replace'>;

export class V1ModelRegistry {
  readonly #pools: V1Pools | undefined;
  readonly #models = new Map<string, V1Model>();

  constructor(options: { readonly pools?: V1Pools }) {
    this.#pools = options.pools;
  }

  async register(entries: readonly V1Model[]): Promise<void> {
    for (const entry of entries) this.#models.set(`${entry.model}\u0000${entry.endpoint}`, entry);
    const pools = this.#pools;
    if (pools === undefined) return;
    const served = new Set(pools.snapshot().map((p) => p.model));
    for (const name of new Set(entries.map((e) => e.model))) {
      if (!served.has(name)) continue;
      const registered = [...this.#models.values()].filter((e) => e.model === name);
      await pools.replace(name, {
        version: Math.max(...registered.map((e) => e.version)),
        backends: registered.map((e) => ({ url: e.endpoint, type: 'vllm' as const })),
      });
    }
  }

  list(): V1Model[] {
    return [...this.#models.values()];
  }

  /** Clears the v1 list only: pools keep their backends until the next registration swaps them atomically. */
  clear(): void {
    this.#models.clear();
  }
}
