// Stores APO candidates as versioned resources without changing what "latest" means for anyone else while
// the run is going (pitfalls.md 57). The store contract makes every write the latest snapshot, so each
// candidate write is followed by re-asserting the snapshot that was latest when the run started (the
// "anchor"); writes are serialised so the window in which a candidate is latest stays one store call wide.
// Ids are namespaced per run (`apo-<run>-v<n>`), never the bare `v<n>` that can collide with other users'.
import type { JsonObject, LightningStore, NamedResources, ResourcesUpdate } from '../../store/types.js';

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
  #anchor: ResourcesUpdate | null = null;
  #queue: Promise<unknown> = Promise.resolve();

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
   * Remembers the current latest snapshot. With none (a fresh store), the seed snapshot becomes the latest:
   * it is what an un-pinned rollout would have used before the run anyway.
   */
  async init(seedTemplate: string): Promise<void> {
    this.#anchor = await this.#store.getLatestResources();
    if (this.#anchor === null) {
      this.#anchor = await this.#store.updateResources(`${this.#runId}-base`, this.#snapshot(seedTemplate, null));
    }
  }

  /** Writes (or rewrites, bumping its version) one candidate's snapshot; returns its resources id. */
  put(template: string, lineage: CandidateLineage): Promise<string> {
    const id = this.resourcesIdFor(lineage.version);
    return this.#serial(async () => {
      await this.#store.updateResources(id, this.#snapshot(template, lineage));
      await this.#restoreAnchor();
      return id;
    });
  }

  /** The run's result: the best prompt becomes the store's latest resources under `<run>-best`. */
  publishBest(template: string, lineage: CandidateLineage): Promise<ResourcesUpdate> {
    return this.#serial(() => this.#store.updateResources(`${this.#runId}-best`, this.#snapshot(template, lineage)));
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

  async #restoreAnchor(): Promise<void> {
    const anchor = this.#anchor;
    if (anchor === null) return;
    this.#anchor = await this.#store.updateResources(anchor.resources_id, anchor.resources);
  }

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => {});
    return run;
  }
}
