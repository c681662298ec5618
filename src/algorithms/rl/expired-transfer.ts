// What a prepared native transfer whose trainer died (no commit, no abort before the deadline) leaves the engines
// holding, judged from the labels they report (docs/weight-swaps.md, "What survives what"). The trainer sends
// tensors to the engines itself, so the gateway never sees how far it got: the label is the only evidence, and the
// gateway must not resume weights it cannot name under the old version.
//   every backend names the old version    -> nothing was sent (or the trainer restored it): resume as the old one;
//   every backend names the new version    -> the trainer finished and labelled it: commit it;
//   anything else (other labels, a mix)    -> unknown: keep the pool out of service until a trainer prepares again.
// A backend reporting no label is judged as the pool's `verifyVersion` judges it after a load: `auto` takes it as no
// claim (it sides with the old version, as before this check existed), `strict` as unknown; `off` checks nothing.
import { labelNames } from './engine-control.js';
import type { ExpiryOutcome } from './swap-stats.js';

export type VerifyPolicy = 'auto' | 'strict' | 'off';

export function judgeExpiredTransfer(options: {
  readonly reported: Readonly<Record<string, string | null>>;
  readonly oldVersion: number;
  readonly newVersion: number;
  readonly policy: VerifyPolicy;
}): ExpiryOutcome {
  const { oldVersion, newVersion, policy } = options;
  if (policy === 'off') return 'resumed_old';
  const labels = Object.values(options.reported);
  const names = (version: number) => (label: string | null) => label !== null && labelNames(label, version);
  const unlabelledIsOld = policy === 'auto';
  if (labels.every((label) => names(oldVersion)(label) || (label === null && unlabelledIsOld))) return 'resumed_old';
  if (labels.every(names(newVersion))) return 'committed_new';
  return 'quarantined';
}
