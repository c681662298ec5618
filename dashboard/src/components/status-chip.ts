import { h } from '../dom.js';

/** A coloured chip for rollout, attempt, worker and span statuses; colours live in styles.css. */
export function statusChip(status: string | null | undefined): HTMLElement {
  const value = status ?? 'unknown';
  return h(
    'span',
    { class: `chip chip-${value.replace(/[^a-z_]/gi, '').toLowerCase()}`, dataset: { status: value } },
    value,
  );
}
