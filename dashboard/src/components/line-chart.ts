// A small SVG line chart (no chart library: the bundle stays small and works offline).
import { h, svg } from '../dom.js';

export interface ChartPoint {
  readonly x: number;
  readonly y: number;
  /** Tooltip text for this point. */
  readonly label: string;
}

export interface ChartSeries {
  readonly name: string;
  /** A class from styles.css (`series-0` …) so colours stay in one place. */
  readonly className: string;
  readonly points: readonly ChartPoint[];
}

export interface LineChartOptions {
  readonly series: readonly ChartSeries[];
  readonly xTitle: string;
  readonly yTitle: string;
  /** Text for an x tick; defaults to the number. */
  readonly xTickLabel?: (x: number) => string;
}

const WIDTH = 820;
const HEIGHT = 300;
const MARGIN = { top: 16, right: 20, bottom: 44, left: 60 };

/** About `count` round tick values covering [min, max]. */
export function niceTicks(min: number, max: number, count: number): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) return [min];
  const raw = (max - min) / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

function domain(values: readonly number[]): [number, number] {
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (min === max) {
    min -= 0.5;
    max += 0.5;
  }
  return [min, max];
}

export function lineChart(options: LineChartOptions): HTMLElement {
  const points = options.series.flatMap((s) => s.points);
  if (points.length === 0) return h('div', { class: 'empty' }, 'No data yet.');
  const [xLo, xHi] = domain(points.map((p) => p.x));
  // A little room on both sides so the first and last points do not sit on the axes.
  const xPad = (xHi - xLo) * 0.03;
  const xMin = xLo - xPad;
  const xMax = xHi + xPad;
  const isIntegerX = points.every((p) => Number.isInteger(p.x));
  const ys = points.map((p) => p.y);
  const [yMinRaw, yMaxRaw] = domain(ys);
  const pad = (yMaxRaw - yMinRaw) * 0.08;
  const yMin = yMinRaw - pad;
  const yMax = yMaxRaw + pad;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x: number): number => MARGIN.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const sy = (y: number): number => MARGIN.top + (1 - (y - yMin) / (yMax - yMin)) * plotH;
  const xLabel = options.xTickLabel ?? ((x: number) => String(x));
  const xTicks = niceTicks(xLo, xHi, 8).filter((t) => !isIntegerX || Number.isInteger(t));
  const yTicks = niceTicks(yMin, yMax, 5);

  const grid = [
    ...yTicks.map((t) =>
      svg(
        'g',
        { class: 'tick' },
        svg('line', { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: sy(t), y2: sy(t), class: 'grid' }),
        svg('text', { x: MARGIN.left - 8, y: sy(t) + 4, 'text-anchor': 'end' }, String(t)),
      ),
    ),
    ...xTicks.map((t) =>
      svg(
        'g',
        { class: 'tick' },
        svg('line', { x1: sx(t), x2: sx(t), y1: MARGIN.top + plotH, y2: MARGIN.top + plotH + 5, class: 'axis' }),
        svg('text', { x: sx(t), y: MARGIN.top + plotH + 18, 'text-anchor': 'middle' }, xLabel(t)),
      ),
    ),
  ];
  const axes = [
    svg('line', { x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: MARGIN.top + plotH, class: 'axis' }),
    svg('line', {
      x1: MARGIN.left,
      x2: WIDTH - MARGIN.right,
      y1: MARGIN.top + plotH,
      y2: MARGIN.top + plotH,
      class: 'axis',
    }),
    svg(
      'text',
      { x: MARGIN.left + plotW / 2, y: HEIGHT - 6, 'text-anchor': 'middle', class: 'axis-title' },
      options.xTitle,
    ),
    svg(
      'text',
      {
        x: 14,
        y: MARGIN.top + plotH / 2,
        'text-anchor': 'middle',
        class: 'axis-title',
        transform: `rotate(-90 14 ${MARGIN.top + plotH / 2})`,
      },
      options.yTitle,
    ),
  ];
  const lines = options.series.map((s) => {
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    const d = sorted.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
    return svg(
      'g',
      { class: `series ${s.className}`, 'data-series': s.name },
      svg('path', { d, class: 'line' }),
      sorted.map((p) =>
        svg(
          'circle',
          { cx: sx(p.x).toFixed(1), cy: sy(p.y).toFixed(1), r: 3.5, class: 'dot' },
          svg('title', {}, p.label),
        ),
      ),
    );
  });
  const chart = svg(
    'svg',
    {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      class: 'chart',
      role: 'img',
      'aria-label': `${options.yTitle} by ${options.xTitle}`,
    },
    grid,
    axes,
    lines,
  );
  const legend = h(
    'div',
    { class: 'legend' },
    options.series.map((s) =>
      h('span', { class: `legend-item ${s.className}` }, h('i', null), `${s.name} (${s.points.length})`),
    ),
  );
  return h('div', { class: 'chart-box' }, chart, legend);
}
