import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/metrics.js';

describe('GatewayMetrics', () => {
  it('renders request counters, histograms and scrape-time gauges in Prometheus text format', async () => {
    const metrics = new GatewayMetrics({ defaultMetrics: false });
    metrics.requests.inc({ route: 'chat', status: '200', model: 'm', outcome: 'ok' });
    metrics.upstreamLatency.observe({ model: 'm', backend: 'b0', stream: 'true' }, 0.2);
    metrics.tokens.inc({ model: 'm', direction: 'in' }, 12);
    metrics.bind({
      storeStatistics: async () => ({ total_rollouts: 3, total_attempts: 4, total_spans: 9 }),
      pools: () => [{ model: 'm', version: 2, backends: [{ id: 'b0', healthy: true, inflight: 5 }] }],
      paused: () => true,
      pauseOverdue: () => true,
    });
    const text = await metrics.render();
    expect(text).toContain('rollgate_requests_total{route="chat",status="200",model="m",outcome="ok"} 1');
    expect(text).toContain(
      'rollgate_upstream_latency_seconds_bucket{le="0.25",model="m",backend="b0",stream="true"} 1',
    );
    expect(text).toContain('rollgate_tokens_total{model="m",direction="in"} 12');
    expect(text).toContain('rollgate_store_objects{kind="spans"} 9');
    expect(text).toContain('rollgate_backend_inflight{model="m",backend="b0"} 5');
    expect(text).toContain('rollgate_backend_healthy{model="m",backend="b0"} 1');
    expect(text).toContain('rollgate_model_version{model="m"} 2');
    expect(text).toContain('rollgate_paused 1');
    expect(text).toContain('rollgate_pause_overdue 1');
    expect(metrics.contentType).toContain('text/plain');
  });

  it('keeps two gateways in one process apart', async () => {
    const a = new GatewayMetrics({ defaultMetrics: false });
    const b = new GatewayMetrics({ defaultMetrics: false });
    a.requests.inc({ route: 'chat', status: '200', model: 'm', outcome: 'ok' });
    expect(await b.render()).not.toContain('rollgate_requests_total{');
  });
});
