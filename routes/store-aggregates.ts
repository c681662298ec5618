// Server-side aggregates for the dashboard, so a page costs one request whatever it shows:
//   GET /v1/agl/rewards?rollout_id_in=…   final reward of each listed rollout (one table page); also
//   POST /v1/agl/rewards/search            with `{"rollout_id_in": [...]}` for up to 1000 ids
//   GET /v1/agl/summary?recent=N           statistics, rollouts per status, the N most recently finished rollouts
//                                          with their final rewards (the algorithm page)
// Both answer from the store's indexed pages and reward spans only; neither reads the whole rollouts table.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../middleware/env.js';
import { STORE_API_MAX_PAGE } from '../src/store/core/page-limits.js';
import { type LightningStore, ROLLOUT_STATUSES, type RolloutStatus } from '../src/store/core/types.js';
import { FinalRewards } from '../src/store/summaries/final-rewards.js';
import type { StoreSummary } from '../src/store/summaries/store-summary.js';
import { parseRequest, readJsonBody } from './request-body.js';

const PREFIX = '/v1/agl';
const MAX_IDS = STORE_API_MAX_PAGE.rollouts;
const DEFAULT_RECENT = 200;

const rewardsQuerySchema = z.object({
  rollout_id_in: z
    .array(z.string().min(1).max(256))
    .min(1, 'rollout_id_in is required')
    .max(MAX_IDS, `at most ${MAX_IDS} rollout ids per request`),
});

const summaryQuerySchema = z.object({
  recent: z.preprocess(
    (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
    z.int().min(1).max(MAX_IDS).default(DEFAULT_RECENT),
  ),
});

export interface StoreAggregateDeps {
  readonly store: LightningStore;
}

export function createStoreAggregateRoutes(deps: StoreAggregateDeps): Hono<AppEnv> {
  const { store } = deps;
  const app = new Hono<AppEnv>();
  const rewards = new FinalRewards(store);

  const rewardsOf = async (raw: unknown) => {
    const query = parseRequest(rewardsQuerySchema, raw);
    // Lookups by id, not a filtered scan of the rollouts table; unknown ids are left out.
    const found = [];
    for (const id of new Set(query.rollout_id_in)) {
      const rollout = await store.getRolloutById(id);
      if (rollout !== null) found.push(rollout);
    }
    return { items: await rewards.of(found) };
  };
  app.get(`${PREFIX}/rewards`, async (c) => {
    const ids = [...(c.req.queries('rollout_id_in') ?? []), ...(c.req.queries('rollout_id_in[]') ?? [])];
    return c.json(await rewardsOf({ rollout_id_in: ids }));
  });
  // A full page of ids does not fit in a URL: the same query with a JSON body.
  app.post(`${PREFIX}/rewards/search`, async (c) => c.json(await rewardsOf(await readJsonBody(c))));

  app.get(`${PREFIX}/summary`, async (c) => {
    const query = parseRequest(summaryQuerySchema, { recent: c.req.query('recent') });
    const statistics = await store.statistics();
    const statusCounts = {} as Record<RolloutStatus, number>;
    // One-row pages: each total is a count, no rollout is read. A turn between counts, as an in-process store
    // counts without I/O and an await alone would not let other requests in.
    for (const status of ROLLOUT_STATUSES) {
      statusCounts[status] = (await store.queryRollouts({ status_in: [status], limit: 1 })).total;
      await yieldToLoop();
    }
    const finished = await store.queryRollouts({
      status_in: ['succeeded', 'failed'],
      sort_by: 'end_time',
      sort_order: 'desc',
      limit: query.recent,
    });
    const finalRewards = await rewards.of(finished.items);
    const recent = finished.items.map((rollout, i) => ({
      rollout: {
        rollout_id: rollout.rollout_id,
        status: rollout.status,
        mode: rollout.mode,
        resources_id: rollout.resources_id,
        metadata: rollout.metadata,
        start_time: rollout.start_time,
        end_time: rollout.end_time,
      },
      reward: finalRewards[i]?.reward ?? null,
    }));
    const summary: StoreSummary = { statistics, status_counts: statusCounts, finished_total: finished.total, recent };
    return c.json(summary);
  });

  return app;
}
