// Faithful history's health per model (GET /metrics/history): how often agents' histories forked (a new training
// row) or needed healing. Rendered only when some pool uses faithful history, so other deployments see nothing.
import type { ModelHistoryStats } from '../../../src/history-stats.js';
import { h } from '../dom.js';

function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)}%`;
}

export function historyHealth(models: readonly ModelHistoryStats[]): HTMLElement | null {
  if (models.length === 0) return null;
  const head = ['Model', 'Calls', 'Fork rate', 'Heal rate', 'Forked', 'Healed', 'Bypassed'];
  return h(
    'section',
    { class: 'history-health', dataset: { testid: 'history-health' } },
    h('h2', null, 'Faithful history'),
    h(
      'table',
      { class: 'grid' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          head.map((title, i) => h('th', { class: i === 0 ? '' : 'num' }, title)),
        ),
      ),
      h(
        'tbody',
        null,
        models.map((m) =>
          h(
            'tr',
            { dataset: { model: m.model } },
            h('td', { class: 'mono' }, m.model),
            h('td', { class: 'num' }, String(m.calls)),
            h('td', { class: 'num', dataset: { testid: 'fork-rate' } }, percent(m.fork_rate)),
            h('td', { class: 'num', dataset: { testid: 'heal-rate' } }, percent(m.heal_rate)),
            h('td', { class: 'num' }, String(m.forked)),
            h('td', { class: 'num' }, String(m.healed)),
            h('td', { class: 'num' }, String(m.bypassed)),
          ),
        ),
      ),
    ),
  );
}
