// A trainer's weights update as the hub, the swap and the weight-load hook read it: a file of its own because all
// three need it and none of them should need the others for it.
import type { SleepLevel } from './engine-control.js';

export interface WeightsUpdate {
  /** The new model version; must be greater than the current one. */
  readonly version: number;
  /** Batches this update trained on; absent = every batch handed out and not yet acknowledged. */
  readonly batch_ids?: readonly string[];
  /** Everything else the trainer sent (e.g. `lora_path`, `lora_name`): passed to the weight-load hook. */
  readonly fields: Readonly<Record<string, string | number | boolean>>;
  /** A prepare only: put the backends to sleep at this level for a colocated trainer (docs/weight-swaps.md). */
  readonly sleep?: SleepLevel;
}
