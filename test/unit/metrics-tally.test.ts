import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/metrics.js';

describe('GatewayMetrics tallies', () => {
  it('adds the per-call tallies to the counters at every scrape, beside direct increments', async () => {
    const metrics = new GatewayMetrics({ defaultMetrics: false });
    metrics.requestTally.inc({ route: 'chat', status: '200', model: 'm', outcome: 'ok' });
    metrics.requestTally.inc({ route: 'chat', status: '200', model: 'm', outcome: 'ok' });
    metrics.requests.inc({ route: 'chat', status: '200', model: 'm', outcome: 'ok' });
    metrics.tokenTally.inc({ model: 'm', direction: 'in' }, 12);
    let text = await metrics.render();
    expect(text).toContain('rollgate_requests_total{route="chat",status="200",model="m",outcome="ok"} 3');
    expect(text).toContain('rollgate_tokens_total{model="m",direction="in"} 12');
    // A second scrape adds only what came since the first.
    metrics.tokenTally.inc({ model: 'm', direction: 'in' }, 3);
    text = await metrics.render();
    expect(text).toContain('rollgate_requests_total{route="chat",status="200",model="m",outcome="ok"} 3');
    expect(text).toContain('rollgate_tokens_total{model="m",direction="in"} 15');
  });

  it('shows a series counted by 0 and keeps label sets whose joined values look alike apart', async () => {
    const metrics = new GatewayMetrics({ defaultMetrics: false });
    metrics.tokenTally.inc({ model: 'm', direction: 'out' }, 0);
    metrics.tokenTally.inc({ model: 'a1:b', direction: 'in' }, 1);
    metrics.tokenTally.inc({ model: 'a', direction: 'b1:in' }, 2);
    const text = await metrics.render();
    expect(text).toContain('rollgate_tokens_total{model="m",direction="out"} 0');
    expect(text).toContain('rollgate_tokens_total{model="a1:b",direction="in"} 1');
    expect(text).toContain('rollgate_tokens_total{model="a",direction="b1:in"} 2');
  });
});
