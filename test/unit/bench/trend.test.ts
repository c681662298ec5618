// The soak report's flatness verdict: a least-squares slope per minute, judged against the series' own level.
import { describe, expect, it } from 'vitest';
import { trendOf } from '../../../bench/trend.js';

const tolerance = { relativeTolerance: 0.1, absoluteTolerance: 1 };
const series = (values: number[]) => values.map((value, i) => ({ minute: i + 1, value }));

describe('trendOf', () => {
  it('fits the slope per minute and calls a steady climb growing', () => {
    // The first window (start-up) is left out; then +10 per minute from 100.
    const trend = trendOf(series([500, 100, 110, 120, 130, 140]), tolerance);
    expect(trend?.slopePerMinute).toBeCloseTo(10);
    expect(trend?.start).toBeCloseTo(100);
    expect(trend?.change).toBeCloseTo(40);
    expect(trend?.flat).toBe(false);
    expect(trend?.samples).toBe(5);
  });

  it('calls noise around a level, and a falling series, flat; skips NaN; needs two points', () => {
    expect(trendOf(series([90, 100, 103, 98, 101, 99]), tolerance)?.flat).toBe(true);
    expect(trendOf(series([300, 200, 150, 120, 100]), tolerance)?.flat).toBe(true);
    expect(trendOf(series([Number.NaN, 5, 5]), tolerance)?.samples).toBe(2);
    expect(trendOf(series([5]), tolerance)).toBeNull();
  });
});
