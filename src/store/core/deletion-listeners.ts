// Who must hear that a rollout is gone: in-process caches keyed by rollout id (the attribution service) would
// otherwise keep vouching for a rollout the store no longer has. Every delete path of a store (its API, retention
// pruning) ends in `notify`, so no caller has to remember to tell the caches itself.

export type RolloutDeletedListener = (rolloutId: string) => void;

export class DeletionListeners {
  readonly #listeners = new Set<RolloutDeletedListener>();

  /** Returns the unsubscribe function. */
  subscribe(listener: RolloutDeletedListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Listeners only drop caches; one that throws must not fail the delete that already happened. */
  notify(rolloutId: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(rolloutId);
      } catch {
        // A cache that cannot forget re-checks on its own bound; the delete stands.
      }
    }
  }
}
