// Endless batches over a dataset (docs/algorithms.md): when the batch is at least the dataset, the
// whole dataset reshuffled each time; otherwise batches of distinct items drawn from a reshuffled pass
// (a batch may span two passes).
import type { Rng } from '../rng.js';

export interface BatchIterator<T> {
  next(): T[];
}

export function createBatchIterator<T>(items: readonly T[], batchSize: number, rng: Rng): BatchIterator<T> {
  if (items.length === 0) throw new RangeError('cannot batch an empty dataset');
  let pass: T[] = [];
  let cursor = 0;
  return {
    next() {
      if (batchSize >= items.length) return rng.shuffle(items);
      const batch: T[] = [];
      while (batch.length < batchSize) {
        if (cursor >= pass.length) {
          pass = rng.shuffle(items);
          cursor = 0;
        }
        batch.push(pass[cursor++] as T);
      }
      return batch;
    },
  };
}
