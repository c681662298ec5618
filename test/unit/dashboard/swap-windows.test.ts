// The swaps page's data: GET /v1/rl/state's `swaps` read into rows of pause-window quantiles per pool and mode.
import { describe, expect, it } from 'vitest';
import { formatMs, swapWindowsOf } from '../../../dashboard/src/swap-windows.js';
import { SwapStats } from '../../../src/algorithms/rl/swap-stats.js';

function report(mode: 'drain' | 'keep', pauseMs: number, drainMs: number) {
  return { mode, version: 1, pause_ms: pauseMs, drain_ms: drainMs, drained_backends: [], sync_ms: pauseMs };
}

describe('swap windows', () => {
  it('reads the p50/p95/max the gateway keeps per pool and mode, with the total count', () => {
    const stats = new SwapStats();
    for (const ms of [100, 300, 200, 900]) stats.recordSwap('policy', report('drain', ms, ms - 50));
    stats.recordSwap('policy', report('keep', 210, 0));
    stats.recordFallback({ model: 'policy', backend: 'http://b:8000/v1' });
    const windows = swapWindowsOf({ model_version: 5, swaps: stats.snapshot() });
    expect(windows).toEqual({
      version: 5,
      rows: [
        {
          model: 'policy',
          mode: 'drain',
          swaps: 4,
          total: 4,
          pauseMs: { p50: 200, p95: 900, max: 900 },
          drainMs: { p50: 150, p95: 850, max: 850 },
        },
        {
          model: 'policy',
          mode: 'keep',
          swaps: 1,
          total: 1,
          pauseMs: { p50: 210, p95: 210, max: 210 },
          drainMs: { p50: 0, p95: 0, max: 0 },
        },
      ],
      fallbacks: [{ model: 'policy', backend: 'http://b:8000/v1', count: 1 }],
    });
  });

  it('keeps the quantiles over the recent 256 swaps while counting all of them', () => {
    const stats = new SwapStats();
    for (let i = 0; i < 300; i++) stats.recordSwap('policy', report('keep', i < 44 ? 10_000 : 100, 0));
    const [row] = swapWindowsOf({ swaps: stats.snapshot() }).rows;
    expect(row).toMatchObject({ swaps: 256, total: 300, pauseMs: { p50: 100, p95: 100, max: 100 } });
  });

  it('reads an answer without swaps (or none at all) as no rows', () => {
    expect(swapWindowsOf({ model_version: 0, swaps: { swaps: [], fallbacks: [], last: null } })).toEqual({
      version: 0,
      rows: [],
      fallbacks: [],
    });
    expect(swapWindowsOf(null)).toEqual({ version: null, rows: [], fallbacks: [] });
  });

  it('formats milliseconds', () => {
    expect(formatMs(215.4)).toBe('215 ms');
    expect(formatMs(12_340)).toBe('12.3 s');
  });
});
