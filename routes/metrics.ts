// `GET /metrics` in the Prometheus text format, and `GET /metrics/history` (faithful history's fork and heal rates
// per model, JSON, for the dashboard); admin scope, decided in middleware/auth.ts.
import { Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import { historyStatsByModel } from '../src/history-stats.js';
import type { GatewayMetrics } from '../src/metrics.js';

export function createMetricsRoutes(options: { metrics: GatewayMetrics }): Hono<AppEnv> {
  const { metrics } = options;
  const app = new Hono<AppEnv>();
  app.get('/metrics', async (c) => {
    const body = await metrics.render();
    return c.body(body, 200, { 'content-type': metrics.contentType });
  });
  app.get('/metrics/history', async (c) => {
    const models = await historyStatsByModel({ calls: metrics.historyCalls, healedTurns: metrics.historyHealedTurns });
    return c.json({ models });
  });
  return app;
}
