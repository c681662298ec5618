// The in-memory LightningStore: fastest, for tests and ephemeral runs. Spans are accounted in bytes and whole
// rollouts' spans are evicted (oldest rollout first) past the eviction threshold.
import { CoreStore, type CoreStoreOptions } from '../core/core-store.js';
import { MemoryBackend, type SpanMemoryOptions } from './memory-backend.js';

export interface MemoryStoreOptions extends CoreStoreOptions, SpanMemoryOptions {}

export class MemoryStore extends CoreStore {
  constructor(options: MemoryStoreOptions = {}) {
    super(new MemoryBackend(options), options);
  }
}
