// Weight swaps: the pause window of the recent swaps per pool and mode (p50/p95/max), the drain wait inside it, and
// the backends that were drained because they could not freeze or abort their generations.
import { h, replaceChildren } from '../dom.js';
import type { Page } from '../page.js';
import { formatMs, type Quantiles, type SwapWindows, swapWindowsOf } from '../swap-windows.js';

function quantileCells(q: Quantiles): HTMLElement[] {
  return [
    h('td', { class: 'num' }, formatMs(q.p50)),
    h('td', { class: 'num' }, formatMs(q.p95)),
    h('td', { class: 'num muted' }, formatMs(q.max)),
  ];
}

function windowsTable(windows: SwapWindows): HTMLElement {
  if (windows.rows.length === 0) {
    return h(
      'p',
      { class: 'muted', dataset: { testid: 'no-swaps' } },
      'No weight swap has completed on this gateway yet.',
    );
  }
  return h(
    'table',
    { class: 'table', dataset: { testid: 'swap-windows' } },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', null, 'Pool'),
        h('th', null, 'Mode'),
        h('th', { class: 'num', title: 'recent swaps the quantiles are taken over / all swaps' }, 'Swaps'),
        h('th', { class: 'num', title: 'how long new calls were held' }, 'Pause p50'),
        h('th', { class: 'num' }, 'p95'),
        h('th', { class: 'num' }, 'max'),
        h(
          'th',
          { class: 'num', title: 'how much of the pause waited for generations in flight to finish' },
          'Drain p50',
        ),
        h('th', { class: 'num' }, 'p95'),
        h('th', { class: 'num' }, 'max'),
      ),
    ),
    h(
      'tbody',
      null,
      windows.rows.map((row) =>
        h(
          'tr',
          null,
          h('td', { class: 'mono' }, row.model),
          h('td', null, h('span', { class: 'kind-badge' }, row.mode)),
          h('td', { class: 'num' }, row.swaps === row.total ? String(row.total) : `${row.swaps} / ${row.total}`),
          ...quantileCells(row.pauseMs),
          ...quantileCells(row.drainMs),
        ),
      ),
    ),
  );
}

function fallbacksList(windows: SwapWindows): HTMLElement | null {
  if (windows.fallbacks.length === 0) return null;
  return h(
    'div',
    null,
    h('h2', null, 'Drained instead'),
    h('p', { class: 'muted' }, 'Backends whose pause route answered 404: each swap waited for their generations.'),
    h(
      'ul',
      null,
      windows.fallbacks.map((f) =>
        h('li', null, h('span', { class: 'mono' }, f.backend), ` (${f.model}): ${f.count}×`),
      ),
    ),
  );
}

export const swapsPage: Page = (root, ctx) => {
  replaceChildren(root, h('h1', null, 'Weight swaps'), h('p', { class: 'muted' }, 'Loading…'));
  ctx.api
    .rlState(ctx.signal)
    .then((state) => {
      if (ctx.signal.aborted) return;
      if (state === null) {
        replaceChildren(
          root,
          h('h1', null, 'Weight swaps'),
          h('p', { class: 'muted', dataset: { testid: 'no-trainer' } }, 'No RL trainer hub on this gateway.'),
        );
        return;
      }
      const windows = swapWindowsOf(state);
      replaceChildren(
        root,
        h('h1', null, 'Weight swaps'),
        windows.version === null ? null : h('p', null, `Model version ${windows.version}`),
        windowsTable(windows),
        fallbacksList(windows),
      );
    })
    .catch((error: unknown) => ctx.fail(root, error));
};
