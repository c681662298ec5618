// Rollouts table: status, mode, attempts, duration, reward, worker; filter by status and id; paging.
// The filter lives in the URL so a view can be shared and survives a reload.
import {
  type AttemptedRollout,
  ROLLOUT_STATUSES,
  type Rollout,
  type RolloutStatus,
} from '../../../src/store/core/types.js';
import { isAbortError } from '../api.js';
import { historyHealth } from '../components/history-health.js';
import { pager } from '../components/pager.js';
import { statusChip } from '../components/status-chip.js';
import { h, replaceChildren } from '../dom.js';
import { elapsed, formatDuration, formatReward, formatTime, nowSeconds } from '../format.js';
import type { Page } from '../page.js';
import { paths } from '../router.js';

const PAGE_SIZES = [25, 50, 100] as const;
const DEFAULT_PAGE_SIZE = 25;

interface TableState {
  readonly statuses: readonly RolloutStatus[];
  readonly idContains: string;
  readonly offset: number;
  readonly limit: number;
}

function isStatus(value: string): value is RolloutStatus {
  return (ROLLOUT_STATUSES as readonly string[]).includes(value);
}

function readState(query: URLSearchParams): TableState {
  const statuses = (query.get('status') ?? '').split(',').filter(isStatus);
  const limitRaw = Number(query.get('limit'));
  const limit = (PAGE_SIZES as readonly number[]).includes(limitRaw) ? limitRaw : DEFAULT_PAGE_SIZE;
  const offsetRaw = Number(query.get('offset'));
  return {
    statuses,
    idContains: query.get('q') ?? '',
    limit,
    offset: Number.isInteger(offsetRaw) && offsetRaw > 0 ? offsetRaw : 0,
  };
}

function toQuery(state: TableState): URLSearchParams {
  const query = new URLSearchParams();
  if (state.statuses.length > 0) query.set('status', state.statuses.join(','));
  if (state.idContains) query.set('q', state.idContains);
  if (state.limit !== DEFAULT_PAGE_SIZE) query.set('limit', String(state.limit));
  if (state.offset > 0) query.set('offset', String(state.offset));
  return query;
}

function hasAttempt(rollout: Rollout | AttemptedRollout): rollout is AttemptedRollout {
  return 'attempt' in rollout && rollout.attempt !== null && typeof rollout.attempt === 'object';
}

export const rolloutsPage: Page = (root, ctx) => {
  const state = readState(ctx.route.query);
  const go = (next: TableState): void => ctx.navigate(paths.rollouts(toQuery(next)));

  const statusFilter = h(
    'div',
    { class: 'status-filter', role: 'group' },
    ROLLOUT_STATUSES.map((status) => {
      const isOn = state.statuses.includes(status);
      return h(
        'button',
        {
          type: 'button',
          class: `chip chip-${status} toggle${isOn ? ' on' : ''}`,
          title: isOn ? `Stop filtering on ${status}` : `Show only ${status} (combine several)`,
          dataset: { status },
          on: {
            click: () =>
              go({
                ...state,
                offset: 0,
                statuses: isOn ? state.statuses.filter((s) => s !== status) : [...state.statuses, status],
              }),
          },
        },
        status,
      );
    }),
  );
  const idInput = h('input', {
    type: 'search',
    class: 'input',
    name: 'q',
    placeholder: 'rollout id contains…',
    value: state.idContains,
    autocomplete: 'off',
  });
  const idForm = h(
    'form',
    {
      class: 'id-filter',
      on: {
        submit: (event) => {
          event.preventDefault();
          go({ ...state, offset: 0, idContains: idInput.value.trim() });
        },
      },
    },
    idInput,
    h('button', { type: 'submit', class: 'btn' }, 'Filter'),
  );
  const sizeSelect = h(
    'select',
    {
      class: 'input',
      name: 'limit',
      title: 'Rows per page',
      on: { change: () => go({ ...state, offset: 0, limit: Number(sizeSelect.value) }) },
    },
    PAGE_SIZES.map((size) => h('option', { value: String(size), selected: size === state.limit }, `${size} / page`)),
  );
  const clear =
    state.statuses.length > 0 || state.idContains
      ? h('a', { href: paths.rollouts(), class: 'btn link' }, 'Clear filters')
      : null;

  const body = h('div', { class: 'table-wrap' }, h('div', { class: 'loading' }, 'Loading rollouts…'));
  const history = h('div', { class: 'history-slot' });
  replaceChildren(
    root,
    h('div', { class: 'page-head' }, h('h1', null, 'Rollouts')),
    history,
    h('div', { class: 'toolbar' }, statusFilter, idForm, sizeSelect, clear),
    body,
  );
  void ctx.api.historyStats(ctx.signal).then(
    (models) => history.replaceChildren(...[historyHealth(models)].filter((e) => e !== null)),
    // The rates are an extra: a gateway without the route (or a key without its scope) still lists rollouts.
    () => {},
  );

  void (async () => {
    try {
      const result = await ctx.api.rollouts(
        {
          statusIn: state.statuses,
          idContains: state.idContains || undefined,
          limit: state.limit,
          offset: state.offset,
          sortBy: 'start_time',
          sortOrder: 'desc',
        },
        ctx.signal,
      );
      const now = nowSeconds();
      const rewardCells = new Map<string, HTMLElement>();
      const rows = result.items.map((rollout) => {
        const attempt = hasAttempt(rollout) ? rollout.attempt : null;
        const rewardCell = h(
          'td',
          { class: 'num reward', dataset: { testid: 'reward' } },
          h('span', { class: 'muted' }, '…'),
        );
        rewardCells.set(rollout.rollout_id, rewardCell);
        const href = paths.rollout(rollout.rollout_id);
        return h(
          'tr',
          {
            class: 'clickable',
            dataset: { rolloutId: rollout.rollout_id },
            on: {
              click: (event) => {
                if ((event.target as Element).closest('a')) return;
                ctx.navigate(href);
              },
            },
          },
          h('td', { class: 'mono' }, h('a', { href }, rollout.rollout_id)),
          h('td', null, statusChip(rollout.status)),
          h('td', null, rollout.mode ?? h('span', { class: 'muted' }, '–')),
          h(
            'td',
            { class: 'num', title: 'attempts so far (latest attempt number)' },
            attempt ? String(attempt.sequence_id) : '0',
          ),
          h('td', { class: 'num' }, formatDuration(elapsed(rollout.start_time, rollout.end_time, now))),
          rewardCell,
          h('td', { class: 'mono' }, attempt?.worker_id ?? h('span', { class: 'muted' }, '–')),
          h('td', { class: 'muted nowrap' }, formatTime(rollout.start_time)),
        );
      });
      const table =
        rows.length === 0
          ? h('div', { class: 'empty' }, 'No rollouts match.')
          : h(
              'table',
              { class: 'grid', dataset: { testid: 'rollouts-table' } },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Rollout', 'Status', 'Mode', 'Attempts', 'Duration', 'Reward', 'Worker', 'Started'].map((title) =>
                    h('th', { class: ['Attempts', 'Duration', 'Reward'].includes(title) ? 'num' : '' }, title),
                  ),
                ),
              ),
              h('tbody', null, rows),
            );
      replaceChildren(
        body,
        table,
        pager({
          offset: state.offset,
          limit: state.limit,
          total: result.total,
          onPage: (offset) => go({ ...state, offset }),
        }),
      );
      // One request for the whole page's rewards (a rollout that never started an attempt has none).
      try {
        const rewards = await ctx.rewards.finalRewards(result.items.filter(hasAttempt), ctx.signal);
        for (const rollout of result.items) {
          const cell = rewardCells.get(rollout.rollout_id);
          const reward = rewards.get(rollout.rollout_id) ?? null;
          cell?.replaceChildren(reward === null ? h('span', { class: 'muted' }, '–') : formatReward(reward));
          if (reward !== null) cell?.setAttribute('data-value', String(reward));
        }
      } catch (error) {
        if (isAbortError(error)) return;
        for (const cell of rewardCells.values()) {
          cell.replaceChildren(h('span', { class: 'muted', title: String(error) }, '?'));
        }
      }
    } catch (error) {
      ctx.fail(body, error);
    }
  })();
};
