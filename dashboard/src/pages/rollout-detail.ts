// One rollout: its fields, its attempts, and a span timeline in sequence order.
import type { Attempt, AttemptedRollout, Rollout, Span } from '../../../src/store/core/types.js';
import { ApiError } from '../api.js';
import { jsonView } from '../components/json-view.js';
import { statusChip } from '../components/status-chip.js';
import { timeline } from '../components/timeline.js';
import { h, replaceChildren } from '../dom.js';
import { elapsed, formatCount, formatDuration, formatReward, formatTime, nowSeconds } from '../format.js';
import type { Page } from '../page.js';
import { paths } from '../router.js';
import { finalReward, isLlmSpan, llmCallOf } from '../spans.js';

function field(label: string, value: Node | string): HTMLElement {
  return h(
    'div',
    { class: 'field' },
    h('div', { class: 'field-label' }, label),
    h('div', { class: 'field-value' }, value),
  );
}

/** Rollouts stored before the totals existed come without them. */
function historyCalls(r: Rollout): number {
  const t = r.history as Rollout['history'] | undefined;
  return t === undefined ? 0 : t.linear + t.healed + t.forked + t.bypassed;
}

function metric(label: string, value: string, testid: string): HTMLElement {
  return h(
    'div',
    { class: 'metric', dataset: { testid } },
    h('div', { class: 'metric-value' }, value),
    h('div', { class: 'metric-label' }, label),
  );
}

function attemptsTable(attempts: readonly Attempt[], selected: string | null, rid: string): HTMLElement {
  const now = nowSeconds();
  const rows = attempts.map((a) =>
    h(
      'tr',
      { class: a.attempt_id === selected ? 'selected' : '', dataset: { attemptId: a.attempt_id } },
      h('td', { class: 'num' }, `#${a.sequence_id}`),
      h(
        'td',
        { class: 'mono' },
        h('a', { href: paths.rollout(rid, a.attempt_id), title: "Show only this attempt's spans" }, a.attempt_id),
      ),
      h('td', null, statusChip(a.status)),
      h('td', { class: 'mono' }, a.worker_id ?? h('span', { class: 'muted' }, '–')),
      h('td', { class: 'nowrap' }, formatTime(a.start_time)),
      h('td', { class: 'num' }, formatDuration(elapsed(a.start_time, a.end_time, now))),
      h('td', { class: 'nowrap muted' }, formatTime(a.last_heartbeat_time)),
    ),
  );
  return h(
    'table',
    { class: 'grid', dataset: { testid: 'attempts-table' } },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['#', 'Attempt', 'Status', 'Worker', 'Started', 'Duration', 'Last heartbeat'].map((t) =>
          h('th', { class: t === '#' || t === 'Duration' ? 'num' : '' }, t),
        ),
      ),
    ),
    h('tbody', null, rows),
  );
}

function tokenTotals(spans: readonly Span[]): { calls: number; input: number; output: number } {
  let calls = 0;
  let input = 0;
  let output = 0;
  for (const span of spans) {
    if (!isLlmSpan(span)) continue;
    const call = llmCallOf(span);
    calls++;
    input += call.inputTokens ?? 0;
    output += call.outputTokens ?? 0;
  }
  return { calls, input, output };
}

export const rolloutDetailPage: Page = (root, ctx) => {
  const rid = ctx.route.params.rid ?? '';
  const selectedAttempt = ctx.route.query.get('attempt');
  const body = h('div', null, h('div', { class: 'loading' }, 'Loading rollout…'));
  replaceChildren(
    root,
    h(
      'div',
      { class: 'crumbs' },
      h('a', { href: paths.rollouts() }, 'Rollouts'),
      ' / ',
      h('span', { class: 'mono' }, rid),
    ),
    body,
  );

  void (async () => {
    try {
      const [rollout, attemptsPage, spansPage] = await Promise.all([
        ctx.api.rollout(rid, ctx.signal),
        ctx.api.attempts(rid, ctx.signal),
        ctx.api.spans(rid, {}, ctx.signal),
      ]);
      if (rollout === null) throw new ApiError(404, `Rollout ${rid} not found`);
      const r: Rollout | AttemptedRollout = rollout;
      const attempts = [...attemptsPage.items].sort((a, b) => a.sequence_id - b.sequence_id);
      const allSpans = spansPage.items;
      const spans = selectedAttempt ? allSpans.filter((s) => s.attempt_id === selectedAttempt) : allSpans;
      // One page of spans is loaded; a long rollout has more. The counts below are of what was loaded, and say so,
      // instead of passing one page's counts off as the rollout's.
      const partial = spansPage.total > allSpans.length;
      const ofLoaded = partial
        ? ` (first ${formatCount(allSpans.length)} of ${formatCount(spansPage.total)} spans)`
        : '';
      const totals = tokenTotals(spans);
      // The final reward is the last one: past the loaded page, the store's own answer has it.
      const reward =
        partial && !selectedAttempt
          ? ((await ctx.api.rewards([rid], ctx.signal))[0]?.reward ?? null)
          : finalReward(spans);
      const latest = attempts[attempts.length - 1];

      const attemptFilter = h(
        'div',
        { class: 'attempt-filter' },
        h(
          'a',
          { href: paths.rollout(rid), class: `btn small${selectedAttempt ? '' : ' on'}` },
          `All attempts (${formatCount(spansPage.total)} spans)`,
        ),
        attempts.map((a) =>
          h(
            'a',
            {
              href: paths.rollout(rid, a.attempt_id),
              class: `btn small${a.attempt_id === selectedAttempt ? ' on' : ''}`,
            },
            partial
              ? `#${a.sequence_id}`
              : `#${a.sequence_id} (${allSpans.filter((s) => s.attempt_id === a.attempt_id).length})`,
          ),
        ),
      );

      replaceChildren(
        body,
        h('div', { class: 'page-head' }, h('h1', { class: 'mono' }, r.rollout_id), statusChip(r.status)),
        h(
          'div',
          { class: 'fields' },
          field('Mode', r.mode ?? '–'),
          field(
            'Resources',
            r.resources_id
              ? h(
                  'a',
                  { href: `${paths.resources()}#${encodeURIComponent(r.resources_id)}`, class: 'mono' },
                  r.resources_id,
                )
              : '–',
          ),
          field('Started', formatTime(r.start_time)),
          field('Ended', formatTime(r.end_time)),
          field('Duration', formatDuration(elapsed(r.start_time, r.end_time, nowSeconds()))),
          field('Worker', latest?.worker_id ?? '–'),
          field('Max attempts', String(r.config.max_attempts)),
          ...(r.failure_reason ? [field('Failure reason', r.failure_reason)] : []),
        ),
        h(
          'div',
          { class: 'metrics' },
          metric('final reward', formatReward(reward), 'final-reward'),
          metric(`LLM calls${ofLoaded}`, formatCount(totals.calls), 'llm-calls'),
          metric(`prompt tokens${ofLoaded}`, formatCount(totals.input), 'prompt-tokens-total'),
          metric(`response tokens${ofLoaded}`, formatCount(totals.output), 'response-tokens-total'),
          metric(
            selectedAttempt ? `spans${ofLoaded}` : 'spans',
            formatCount(selectedAttempt ? spans.length : spansPage.total),
            'span-count',
          ),
          // Faithful history's verdicts over the rollout's calls (absent for rollouts of other pools).
          ...(historyCalls(r) > 0
            ? [
                metric('history linear', formatCount(r.history.linear), 'history-linear'),
                metric('history healed', formatCount(r.history.healed), 'history-healed'),
                metric('history forked', formatCount(r.history.forked), 'history-forked'),
              ]
            : []),
        ),
        h(
          'div',
          { class: 'json-row' },
          jsonView('Input', r.input),
          jsonView('Metadata', r.metadata),
          jsonView('Config', r.config),
        ),
        h('h2', null, `Attempts (${attempts.length})`),
        attemptsTable(attempts, selectedAttempt, rid),
        h('h2', null, 'Spans'),
        attemptFilter,
        timeline({
          spans,
          attempts,
          callHref: (span) => paths.call(rid, span.span_id, span.attempt_id),
          navigate: (url) => ctx.navigate(url),
        }),
      );
    } catch (error) {
      ctx.fail(body, error);
    }
  })();
};
