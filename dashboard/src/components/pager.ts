import { h } from '../dom.js';

export interface PagerOptions {
  readonly offset: number;
  readonly limit: number;
  readonly total: number;
  readonly onPage: (offset: number) => void;
}

export function pager(options: PagerOptions): HTMLElement {
  const { offset, limit, total, onPage } = options;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  const page = Math.floor(offset / limit) + 1;
  const pages = Math.max(1, Math.ceil(total / limit));
  return h(
    'div',
    { class: 'pager' },
    h(
      'button',
      {
        type: 'button',
        class: 'btn',
        disabled: offset <= 0,
        dataset: { action: 'prev' },
        on: { click: () => onPage(Math.max(0, offset - limit)) },
      },
      '‹ Prev',
    ),
    h(
      'span',
      { class: 'pager-info', dataset: { testid: 'pager-info' } },
      `${first}–${last} of ${total} · page ${page}/${pages}`,
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'btn',
        disabled: offset + limit >= total,
        dataset: { action: 'next' },
        on: { click: () => onPage(offset + limit) },
      },
      'Next ›',
    ),
  );
}
