// One LLM call: its messages side by side with its prompt/response token ids and per-token logprobs.
import { ApiError } from '../api.js';
import { jsonView } from '../components/json-view.js';
import { messageList } from '../components/messages.js';
import { statusChip } from '../components/status-chip.js';
import {
  DEFAULT_LOW_PROB_THRESHOLD,
  heatColour,
  LOW_PROB_THRESHOLDS,
  promptTokenGrid,
  responseTokenGrid,
  summarizeLogprobs,
} from '../components/token-grid.js';
import { h, replaceChildren } from '../dom.js';
import { formatCount, formatDuration, formatTime } from '../format.js';
import type { Page } from '../page.js';
import { paths } from '../router.js';
import { type LlmCall, llmCallOf } from '../spans.js';

function tokenPanel(call: LlmCall): HTMLElement {
  let threshold = DEFAULT_LOW_PROB_THRESHOLD;
  let showIds = false;
  const gridSlot = h('div');
  const summarySlot = h('div', { class: 'lp-summary' });
  const hasText = call.responseTokens.some((t) => t.text !== null);
  const hasLogprobs = call.responseTokens.some((t) => t.logprob !== null);

  const render = (): void => {
    const s = summarizeLogprobs(call.responseTokens, threshold);
    replaceChildren(
      summarySlot,
      h('span', null, `${formatCount(call.responseTokens.length)} tokens`),
      s.mean === null
        ? h('span', { class: 'muted' }, 'no logprobs recorded')
        : [
            h('span', null, `mean logprob ${s.mean.toFixed(3)}`),
            h('span', null, `min ${s.min?.toFixed(3)}`),
            h(
              'span',
              { class: s.low > 0 ? 'low-count' : '', dataset: { testid: 'low-count' } },
              `${s.low} below p ${threshold}`,
            ),
          ],
    );
    replaceChildren(
      gridSlot,
      call.responseTokens.length === 0
        ? h('div', { class: 'empty' }, 'No response token ids recorded.')
        : responseTokenGrid({ tokens: call.responseTokens, threshold, showIds }),
    );
  };

  const thresholdSelect = h(
    'select',
    {
      class: 'input small',
      name: 'threshold',
      title: 'Outline tokens whose probability is below this',
      on: {
        change: () => {
          threshold = Number(thresholdSelect.value);
          render();
        },
      },
    },
    LOW_PROB_THRESHOLDS.map((t) => h('option', { value: String(t), selected: t === threshold }, `low: p < ${t}`)),
  );
  const idsToggle = h('input', {
    type: 'checkbox',
    id: 'show-ids',
    checked: showIds || !hasText,
    disabled: !hasText,
    on: {
      change: () => {
        showIds = idsToggle.checked;
        render();
      },
    },
  });
  showIds = !hasText;
  const legend = hasLogprobs
    ? h(
        'div',
        { class: 'heat-legend' },
        'p',
        [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 1].map((p) =>
          h('span', { class: 'heat-swatch', style: { background: heatColour(p) } }, String(p)),
        ),
      )
    : null;
  render();
  return h(
    'div',
    { class: 'panel' },
    h('h2', null, 'Response tokens'),
    h(
      'div',
      { class: 'toolbar compact' },
      thresholdSelect,
      h('label', { for: 'show-ids', class: 'check' }, idsToggle, ' show ids'),
      legend,
    ),
    summarySlot,
    gridSlot,
    h('h2', null, `Prompt token ids (${formatCount(call.promptTokenIds?.length ?? 0)})`),
    call.promptTokenIds && call.promptTokenIds.length > 0
      ? promptTokenGrid(call.promptTokenIds)
      : h('div', { class: 'empty' }, 'No prompt token ids recorded.'),
  );
}

export const callPage: Page = (root, ctx) => {
  const rid = ctx.route.params.rid ?? '';
  const sid = ctx.route.params.sid ?? '';
  const attemptId = ctx.route.query.get('attempt') ?? undefined;
  const body = h('div', null, h('div', { class: 'loading' }, 'Loading call…'));
  replaceChildren(
    root,
    h(
      'div',
      { class: 'crumbs' },
      h('a', { href: paths.rollouts() }, 'Rollouts'),
      ' / ',
      h('a', { href: paths.rollout(rid), class: 'mono' }, rid),
      ' / ',
      h('span', { class: 'mono' }, sid),
    ),
    body,
  );
  void (async () => {
    try {
      const page = await ctx.api.spans(rid, { spanId: sid, attemptId }, ctx.signal);
      const span = page.items[0];
      if (!span) throw new ApiError(404, `Span ${sid} not found in rollout ${rid}`);
      const call = llmCallOf(span);
      const duration = span.start_time !== null && span.end_time !== null ? span.end_time - span.start_time : null;
      replaceChildren(
        body,
        h(
          'div',
          { class: 'page-head' },
          h('h1', null, span.name),
          statusChip(span.status.status_code === 'ERROR' ? 'error' : 'ok'),
        ),
        h(
          'div',
          { class: 'fields' },
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Sequence'),
            h('div', { class: 'field-value' }, String(span.sequence_id)),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Attempt'),
            h('div', { class: 'field-value mono' }, span.attempt_id),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Model'),
            h('div', { class: 'field-value' }, call.model ?? '–'),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Started'),
            h('div', { class: 'field-value' }, formatTime(span.start_time)),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Duration'),
            h('div', { class: 'field-value' }, formatDuration(duration)),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Tokens in → out'),
            h('div', { class: 'field-value' }, `${formatCount(call.inputTokens)} → ${formatCount(call.outputTokens)}`),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Finish'),
            h('div', { class: 'field-value' }, call.finishReasons.join(', ') || '–'),
          ),
          h(
            'div',
            { class: 'field' },
            h('div', { class: 'field-label' }, 'Token ids'),
            h('div', { class: 'field-value' }, call.tokenIdsStatus ?? '–'),
          ),
        ),
        span.status.description ? h('div', { class: 'error-box' }, span.status.description) : null,
        h(
          'div',
          { class: 'side-by-side' },
          h(
            'div',
            { class: 'panel', dataset: { testid: 'messages' } },
            h('h2', null, 'Input messages'),
            messageList(call.inputMessages, 'No input messages recorded (content capture may be off).'),
            h('h2', null, 'Output'),
            messageList(call.outputMessages, 'No output messages recorded.'),
          ),
          tokenPanel(call),
        ),
        jsonView('All attributes', span.attributes),
      );
    } catch (error) {
      ctx.fail(body, error);
    }
  })();
};
