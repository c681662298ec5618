import { h } from '../dom.js';
import { pretty } from '../format.js';

/** Collapsible pretty-printed JSON (inputs, metadata, attributes). */
export function jsonView(label: string, value: unknown, options: { open?: boolean } = {}): HTMLElement {
  const details = h(
    'details',
    { class: 'json' },
    h('summary', null, label),
    h('pre', { class: 'mono' }, pretty(value)),
  );
  if (options.open) details.open = true;
  return details;
}
