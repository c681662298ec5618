// One page of v1's `GET /api/rollouts?state_in=…`, read from the store in pages. A v1 state is decided per rollout
// (rollout-map.ts: a store `running` rollout may still show `queuing`), so the store is asked for the candidate
// statuses a page at a time and the v1 state filtered here; the request never reads more of the table than it
// needs to fill one page, and yields to the event loop between store pages, so other requests run in between
// (an in-process store answers without I/O, so an await alone would not let them).
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { LightningStore, RolloutStatus } from '../store/core/types.js';
import { toV1Rollout, type V1Rollout, type V1State } from './rollout-map.js';

/** Response header with the `offset` of the next page; absent on the last page. */
export const HEADER_NEXT_OFFSET = 'x-next-offset';

/** v1 states to the store statuses that may currently show as that state (see rollout-map.ts). */
const STATUSES_FOR_STATE: Readonly<Record<V1State, readonly RolloutStatus[]>> = {
  queuing: ['queuing', 'requeuing', 'preparing', 'running'],
  running: ['preparing', 'running'],
  succeeded: ['succeeded'],
  failed: ['failed', 'cancelled'],
};

export interface V1ListPage {
  items: V1Rollout[];
  /** Position in the store's candidate list where the next page starts; null when none is left. */
  nextOffset: number | null;
}

export async function listV1Rollouts(
  store: Pick<LightningStore, 'queryRollouts'>,
  options: { states: ReadonlySet<V1State>; limit: number; offset: number },
): Promise<V1ListPage> {
  const { states, limit } = options;
  const statuses = [...new Set([...states].flatMap((s) => STATUSES_FOR_STATE[s]))];
  const items: V1Rollout[] = [];
  let offset = options.offset;
  for (;;) {
    const page = await store.queryRollouts({ status_in: statuses, limit, offset });
    for (const rollout of page.items) {
      offset++;
      const v1 = toV1Rollout(rollout);
      if (!states.has(v1.status.state)) continue;
      items.push(v1);
      if (items.length === limit) return { items, nextOffset: offset < page.total ? offset : null };
    }
    if (page.items.length === 0 || offset >= page.total) return { items, nextOffset: null };
    await yieldToLoop();
  }
}
