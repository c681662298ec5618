// Live view of an algorithm run: store totals, rollouts by status, and mean final reward per
// step / resources version / batch as a line chart, refreshed while the page is open.
import { ROLLOUT_STATUSES, type StoreStatistics } from '../../../src/store/core/types.js';
import { isAbortError, isAuthError } from '../api.js';
import { type ChartSeries, lineChart } from '../components/line-chart.js';
import { statusChip } from '../components/status-chip.js';
import { h, replaceChildren } from '../dom.js';
import { formatBytes, formatCount, formatDuration, formatReward } from '../format.js';
import type { Page } from '../page.js';
import {
  autoGrouping,
  GROUPINGS,
  type Grouping,
  groupRewards,
  type RewardGroup,
  type RewardSample,
} from '../reward-series.js';
import { paths } from '../router.js';

const DEFAULT_REFRESH_S = 5;
const MIN_REFRESH_S = 1;
const MAX_ROLLOUTS = 200;
const DEFAULT_BATCH_SIZE = 10;
const MODES = ['train', 'val', 'test', 'none'];

function isGrouping(value: string | null): value is Grouping {
  return value !== null && (GROUPINGS as readonly string[]).includes(value);
}

function seriesOf(groups: readonly RewardGroup[]): ChartSeries[] {
  return MODES.flatMap((mode, i) => {
    const points = groups
      .filter((g) => g.mode === mode)
      .map((g) => ({ x: g.x, y: g.mean, label: `${mode} · ${g.label}: mean ${formatReward(g.mean)} over ${g.count}` }));
    return points.length > 0 ? [{ name: mode, className: `series-${i}`, points }] : [];
  });
}

function statsView(stats: StoreStatistics): HTMLElement {
  const item = (label: string, value: string): HTMLElement =>
    h(
      'div',
      { class: 'metric' },
      h('div', { class: 'metric-value' }, value),
      h('div', { class: 'metric-label' }, label),
    );
  return h(
    'div',
    { class: 'metrics', dataset: { testid: 'statistics' } },
    item('rollouts', formatCount(stats.total_rollouts)),
    item('attempts', formatCount(stats.total_attempts)),
    item('spans', formatCount(stats.total_spans)),
    item('resources', formatCount(stats.total_resources)),
    item('workers', formatCount(stats.total_workers)),
    item('span bytes', formatBytes(stats.total_span_bytes)),
    item('uptime', formatDuration(stats.uptime)),
  );
}

export const algorithmPage: Page = (root, ctx) => {
  const query = ctx.route.query;
  const requested = query.get('group');
  const batchSize = Math.max(1, Math.min(1000, Number(query.get('batch')) || DEFAULT_BATCH_SIZE));
  const refreshS = Math.max(MIN_REFRESH_S, Number(query.get('refresh')) || DEFAULT_REFRESH_S);
  let isLive = query.get('live') !== '0';
  let inFlight = false;

  const statusSlot = h('div', { class: 'status-counts' });
  const statsSlot = h('div');
  const chartSlot = h(
    'div',
    { dataset: { testid: 'reward-chart' } },
    h('div', { class: 'loading' }, 'Loading rewards…'),
  );
  const tableSlot = h('div');
  const updated = h('span', { class: 'muted', dataset: { testid: 'updated' } }, '');
  const liveToggle = h('input', {
    type: 'checkbox',
    id: 'live',
    checked: isLive,
    on: {
      change: () => {
        isLive = liveToggle.checked;
      },
    },
  });
  const groupSelect = h(
    'select',
    {
      class: 'input',
      name: 'group',
      on: {
        change: () => {
          const next = new URLSearchParams(query);
          if (groupSelect.value === 'auto') next.delete('group');
          else next.set('group', groupSelect.value);
          ctx.navigate(`${paths.algorithm()}${next.size > 0 ? `?${next}` : ''}`, { replace: true });
        },
      },
    },
    h('option', { value: 'auto', selected: !isGrouping(requested) }, 'group: auto'),
    GROUPINGS.map((g) =>
      h(
        'option',
        { value: g, selected: g === requested },
        g === 'step' ? 'per step / round' : g === 'resources' ? 'per resources version' : `per ${batchSize} rollouts`,
      ),
    ),
  );

  replaceChildren(
    root,
    h('div', { class: 'page-head' }, h('h1', null, 'Algorithm run'), updated),
    h(
      'div',
      { class: 'toolbar' },
      groupSelect,
      h('label', { for: 'live', class: 'check' }, liveToggle, ` live (every ${refreshS} s)`),
    ),
    statsSlot,
    statusSlot,
    h('h2', null, 'Mean final reward'),
    chartSlot,
    tableSlot,
  );

  const refresh = async (): Promise<void> => {
    if (inFlight) return;
    inFlight = true;
    try {
      // One request: the gateway counts and picks the newest finished rollouts with their rewards itself.
      const summary = await ctx.api.summary(MAX_ROLLOUTS, ctx.signal);
      const stats = summary.statistics;
      const counts = ROLLOUT_STATUSES.map((status) => ({ status, total: summary.status_counts[status] ?? 0 }));
      const finished = { total: summary.finished_total };
      const samples: RewardSample[] = summary.recent.map(({ rollout, reward }) => ({ rollout, reward }));
      const grouping = isGrouping(requested) ? requested : autoGrouping(samples);
      const groups = groupRewards(samples, { grouping, batchSize });

      replaceChildren(statsSlot, statsView(stats));
      replaceChildren(
        statusSlot,
        counts.map((c) =>
          h(
            'a',
            {
              class: 'status-count',
              href: paths.rollouts(new URLSearchParams({ status: c.status })),
              dataset: { status: c.status },
            },
            statusChip(c.status),
            h('span', { class: 'count' }, formatCount(c.total)),
          ),
        ),
      );
      const labels = new Map(groups.map((g) => [g.x, g.label]));
      replaceChildren(
        chartSlot,
        h(
          'div',
          { class: 'muted small-note' },
          `${samples.length} most recent finished rollouts${finished.total > samples.length ? ` of ${finished.total}` : ''}, grouped ${
            grouping === 'step'
              ? 'by metadata step/round'
              : grouping === 'resources'
                ? 'by resources version'
                : `in batches of ${batchSize}`
          }; null rewards count as 0.`,
        ),
        lineChart({
          series: seriesOf(groups),
          xTitle: grouping === 'step' ? 'step' : grouping === 'resources' ? 'resources version' : 'batch',
          yTitle: 'mean reward',
          xTickLabel:
            grouping === 'step' ? undefined : (x) => (grouping === 'resources' ? (labels.get(x) ?? '') : String(x + 1)),
        }),
      );
      replaceChildren(
        tableSlot,
        groups.length === 0
          ? null
          : h(
              'table',
              { class: 'grid compact narrow', dataset: { testid: 'reward-groups' } },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  h('th', null, 'Group'),
                  h('th', null, 'Mode'),
                  h('th', { class: 'num' }, 'Rollouts'),
                  h('th', { class: 'num' }, 'With reward'),
                  h('th', { class: 'num' }, 'Mean reward'),
                ),
              ),
              h(
                'tbody',
                null,
                [...groups]
                  .reverse()
                  .map((g) =>
                    h(
                      'tr',
                      null,
                      h('td', { class: 'mono' }, g.label),
                      h('td', null, g.mode),
                      h('td', { class: 'num' }, String(g.count)),
                      h('td', { class: 'num' }, String(g.withReward)),
                      h('td', { class: 'num' }, formatReward(g.mean)),
                    ),
                  ),
              ),
            ),
      );
      updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (isAbortError(error)) return;
      if (isAuthError(error)) isLive = false;
      ctx.fail(chartSlot, error);
    } finally {
      inFlight = false;
    }
  };

  void refresh();
  const timer = window.setInterval(() => {
    if (isLive && document.visibilityState === 'visible') void refresh();
  }, refreshS * 1000);
  ctx.signal.addEventListener('abort', () => window.clearInterval(timer), { once: true });
};
