// `GET /metrics` in the Prometheus text format (admin scope, decided in middleware/auth.ts).
import { Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import type { GatewayMetrics } from '../src/metrics.js';

export function createMetricsRoutes(options: { metrics: GatewayMetrics }): Hono<AppEnv> {
  const { metrics } = options;
  const app = new Hono<AppEnv>();
  app.get('/metrics', async (c) => {
    const body = await metrics.render();
    return c.body(body, 200, { 'content-type': metrics.contentType });
  });
  return app;
}
