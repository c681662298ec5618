// Stores APO candidates as versioned resources without changing what "latest" means for anyone else while
// the run is going (docs/failure-classes.md#57): candidates are written with `latest: false`, so there is no window in which
// an un-pinned rollout could pick one up.
// Ids are namespaced per run (`apo-<run>-v<n>`), never the bare `v<n>` that can collide with other users'.
import type { JsonObject, LightningStore, NamedResources, ResourcesUpdate } from '../../store/core/types.js';

export interface CandidateLineage {
  readonly runId: string;
  readonly version: string;
  readonly parentVersion: string | null;
  readonly parentResourcesId: string | null;
  readonly round: number;
  readonly critique: string | null;
  readonly scores: JsonObject;
}

export interface CandidateStoreOptions {
  readonly store: LightningStore;
  readonly runId: string;
  readonly resourceName: string;
  /** Resources every candidate snapshot carries besides the prompt (LLM endpoints, other templates). */
  readonly baseResources: NamedResources;
}

export class CandidateStore {
  readonly #store: LightningStore;
  readonly #runId: string;
  readonly #resourceName: string;
  readonly #base: NamedResources;

  constructor(options: CandidateStoreOptions) {
    this.#store = options.store;
    this.#runId = options.runId;
    this.#resourceName = options.resourceName;
    this.#base = options.baseResources;
  }

  resourcesIdFor(version: string): string {
    return `${this.#runId}-${version}`;
  }

  /**
   * With no latest snapshot (a fresh store), the seed snapshot becomes the latest: it is what an un-pinned
   * rollout would have used before the run anyway.
   */
  async init(seedTemplate: string): Promise<void> {
    if ((await this.#store.getLatestResources()) === null) {
      await this.#store.updateResources(`${this.#runId}-base`, this.#snapshot(seedTemplate, null));
    }
  }

  /** Writes (or rewrites, bumping its version) one candidate's snapshot; returns its resources id. */
  async put(template: string, lineage: CandidateLineage): Promise<string> {
    const id = this.resourcesIdFor(lineage.version);
    await this.#store.updateResources(id, this.#snapshot(template, lineage), { latest: false });
    return id;
  }

  /** The run's result: the best prompt becomes the store's latest resources under `<run>-best`. */
  publishBest(template: string, lineage: CandidateLineage): Promise<ResourcesUpdate> {
    return this.#store.updateResources(`${this.#runId}-best`, this.#snapshot(template, lineage));
  }

  #snapshot(template: string, lineage: CandidateLineage | null): NamedResources {
    const prompt: NamedResources[string] = {
      resource_type: 'prompt_template',
      template,
      engine: 'f-string',
      ...(lineage === null
        ? {}
        : {
            metadata: {
              apo_run_id: lineage.runId,
              version: lineage.version,
              parent_version: lineage.parentVersion,
              parent_resources_id: lineage.parentResourcesId,
              round: lineage.round,
              critique: lineage.critique,
              scores: lineage.scores,
            },
          }),
    };
    return { ...this.#base, [this.#resourceName]: prompt };
  }
}
