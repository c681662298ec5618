// Span timeline in sequence order: one row per span with a bar placed on the rollout's time axis.
import type { Attempt, Span } from '../../../src/store/core/types.js';
import { h } from '../dom.js';
import { formatDuration, formatReward, pretty } from '../format.js';
import { inSequenceOrder, isLlmSpan, llmCallOf, rewardsOf } from '../spans.js';

export interface TimelineOptions {
  readonly spans: readonly Span[];
  readonly attempts: readonly Attempt[];
  readonly callHref: (span: Span) => string;
  readonly navigate: (url: string) => void;
}

type SpanKind = 'llm' | 'reward' | 'other';

function kindOf(span: Span): SpanKind {
  if (rewardsOf(span).length > 0) return 'reward';
  return isLlmSpan(span) ? 'llm' : 'other';
}

function summary(span: Span, kind: SpanKind): string {
  if (kind === 'reward') {
    return rewardsOf(span)
      .map((r) => `${r.name} = ${formatReward(r.value)}`)
      .join(', ');
  }
  if (kind === 'llm') {
    const call = llmCallOf(span);
    const tokens = `${call.inputTokens ?? '?'} → ${call.outputTokens ?? '?'} tokens`;
    const finish = call.finishReasons.length > 0 ? ` · ${call.finishReasons.join(',')}` : '';
    return `${call.model ?? 'model ?'} · ${tokens}${finish}`;
  }
  return Object.keys(span.attributes).length > 0 ? `${Object.keys(span.attributes).length} attributes` : '';
}

export function timeline(options: TimelineOptions): HTMLElement {
  const spans = inSequenceOrder(options.spans);
  if (spans.length === 0) return h('div', { class: 'empty' }, 'No spans recorded for this selection.');
  const starts = spans.flatMap((s) => (s.start_time === null ? [] : [s.start_time]));
  const ends = spans.flatMap((s) => [s.end_time ?? s.start_time ?? Number.NaN]).filter(Number.isFinite);
  const t0 = Math.min(...starts);
  const range = Math.max(1e-6, Math.max(...ends, t0) - t0);
  const attemptNumber = new Map(options.attempts.map((a) => [a.attempt_id, a.sequence_id]));

  const rows = spans.flatMap((span) => {
    const kind = kindOf(span);
    const start = span.start_time ?? t0;
    const end = span.end_time ?? start;
    const left = ((start - t0) / range) * 100;
    const width = Math.max(0.6, ((end - start) / range) * 100);
    const isError = span.status.status_code === 'ERROR';
    const detailRow = h(
      'tr',
      { class: 'span-detail hidden' },
      h(
        'td',
        { colspan: 7 },
        h('pre', { class: 'mono' }, pretty({ status: span.status, attributes: span.attributes })),
      ),
    );
    const row = h(
      'tr',
      {
        class: `span-row kind-${kind}${isError ? ' error' : ''} clickable`,
        dataset: { spanId: span.span_id, seq: String(span.sequence_id), kind },
        title: kind === 'llm' ? 'Open this call' : 'Show attributes',
        on: {
          click: (event) => {
            if ((event.target as Element).closest('a')) return;
            if (kind === 'llm') options.navigate(options.callHref(span));
            else detailRow.classList.toggle('hidden');
          },
        },
      },
      h('td', { class: 'num mono' }, String(span.sequence_id)),
      h(
        'td',
        { class: 'span-name' },
        h('span', { class: `kind-badge kind-${kind}` }, kind === 'llm' ? 'LLM' : kind),
        kind === 'llm' ? h('a', { href: options.callHref(span) }, span.name) : span.name,
        isError ? h('span', { class: 'chip chip-failed small' }, 'error') : null,
      ),
      h('td', { class: 'muted num' }, `#${attemptNumber.get(span.attempt_id) ?? '?'}`),
      h(
        'td',
        { class: 'gantt-cell' },
        h(
          'div',
          { class: 'gantt' },
          h('div', {
            class: `bar kind-${kind}`,
            style: { left: `${left.toFixed(2)}%`, width: `${Math.min(width, 100 - left).toFixed(2)}%` },
          }),
        ),
      ),
      h(
        'td',
        { class: 'num' },
        formatDuration(span.end_time !== null && span.start_time !== null ? end - start : null),
      ),
      h('td', { class: 'summary' }, summary(span, kind)),
      h('td', { class: 'mono muted' }, span.span_id.slice(0, 8)),
    );
    return [row, detailRow];
  });
  return h(
    'table',
    { class: 'grid timeline', dataset: { testid: 'timeline' } },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { class: 'num' }, 'Seq'),
        h('th', null, 'Span'),
        h('th', { class: 'num' }, 'Att.'),
        h('th', { class: 'gantt-head' }, `Timeline (${formatDuration(range)})`),
        h('th', { class: 'num' }, 'Duration'),
        h('th', null, 'Summary'),
        h('th', null, 'Span id'),
      ),
    ),
    h('tbody', null, rows),
  );
}
