// Resource snapshots and their versions; algorithm candidates show their parent and score.
import type { ResourcesUpdate } from '../../../src/store/core/types.js';
import { candidateInfo } from '../candidates.js';
import { jsonView } from '../components/json-view.js';
import { pager } from '../components/pager.js';
import { h, replaceChildren } from '../dom.js';
import { formatReward, formatTime } from '../format.js';
import type { Page } from '../page.js';
import { paths } from '../router.js';

const PAGE_SIZE = 50;

function resourceView(name: string, resource: Record<string, unknown>): HTMLElement {
  const type = typeof resource.resource_type === 'string' ? resource.resource_type : 'unknown';
  let content: HTMLElement;
  if (type === 'prompt_template' && typeof resource.template === 'string') {
    content = h('pre', { class: 'mono template' }, resource.template);
  } else if ((type === 'llm' || type === 'proxy_llm') && typeof resource.endpoint === 'string') {
    const { api_key: _hidden, ...shown } = resource;
    content = h('pre', { class: 'mono' }, JSON.stringify(shown, null, 2));
  } else {
    content = h('pre', { class: 'mono' }, JSON.stringify(resource, null, 2));
  }
  return h(
    'div',
    { class: 'resource' },
    h(
      'div',
      { class: 'resource-head' },
      h('strong', null, name),
      h('span', { class: 'kind-badge' }, type),
      typeof resource.engine === 'string' ? h('span', { class: 'muted' }, resource.engine) : null,
    ),
    content,
  );
}

function rowsFor(update: ResourcesUpdate, options: { isLatest: boolean; isOpen: boolean }): HTMLElement[] {
  const info = candidateInfo(update);
  const names = Object.entries(update.resources).map(([name, r]) => `${name}: ${r.resource_type}`);
  const detail = h(
    'tr',
    { class: `resource-detail${options.isOpen ? '' : ' hidden'}` },
    h(
      'td',
      { colspan: 8 },
      h(
        'div',
        { class: 'resource-list' },
        Object.entries(update.resources).map(([name, r]) => resourceView(name, r as Record<string, unknown>)),
      ),
      jsonView('Raw snapshot', update),
    ),
  );
  const row = h(
    'tr',
    {
      class: `clickable${options.isOpen ? ' selected' : ''}`,
      id: `res-${update.resources_id}`,
      dataset: { resourcesId: update.resources_id },
      on: { click: () => detail.classList.toggle('hidden') },
    },
    h(
      'td',
      { class: 'mono' },
      update.resources_id,
      options.isLatest
        ? h('span', { class: 'chip chip-succeeded small', title: 'what new rollouts get by default' }, 'latest')
        : null,
    ),
    h('td', { class: 'num', title: 'store version: 1 on create, +1 on each update' }, String(update.version)),
    h(
      'td',
      { dataset: { testid: 'candidate' } },
      info.version ?? (info.round === null ? h('span', { class: 'muted' }, '–') : ''),
      info.round === null ? null : h('span', { class: 'muted' }, ` · round ${info.round}`),
    ),
    h('td', null, names.join(', ')),
    h(
      'td',
      { class: 'mono', dataset: { testid: 'parent' } },
      info.parent === null
        ? h('span', { class: 'muted' }, '–')
        : info.parentResourcesId === null
          ? info.parent
          : h(
              'a',
              {
                href: `${paths.resources()}#${encodeURIComponent(info.parentResourcesId)}`,
                title: info.parentResourcesId,
              },
              info.parent,
            ),
    ),
    h(
      'td',
      {
        class: 'num',
        dataset: { testid: 'score' },
        title: Object.entries(info.scores)
          .map(([purpose, score]) => `${purpose}: ${formatReward(score)}`)
          .join('\n'),
      },
      info.score === null ? h('span', { class: 'muted' }, '–') : formatReward(info.score),
    ),
    h('td', { class: 'nowrap muted' }, formatTime(update.create_time)),
    h('td', { class: 'nowrap' }, formatTime(update.update_time)),
  );
  return [row, detail];
}

export const resourcesPage: Page = (root, ctx) => {
  const offsetRaw = Number(ctx.route.query.get('offset'));
  const offset = Number.isInteger(offsetRaw) && offsetRaw > 0 ? offsetRaw : 0;
  const open = decodeURIComponent(window.location.hash.slice(1));
  const body = h('div', null, h('div', { class: 'loading' }, 'Loading resources…'));
  replaceChildren(root, h('div', { class: 'page-head' }, h('h1', null, 'Resources')), body);
  void (async () => {
    try {
      const [page, latest] = await Promise.all([
        ctx.api.resources({ limit: PAGE_SIZE, offset }, ctx.signal),
        ctx.api.latestResources(ctx.signal),
      ]);
      const rows = page.items.flatMap((u) =>
        rowsFor(u, { isLatest: u.resources_id === latest?.resources_id, isOpen: u.resources_id === open }),
      );
      replaceChildren(
        body,
        page.items.length === 0
          ? h('div', { class: 'empty' }, 'No resources yet.')
          : h(
              'table',
              { class: 'grid', dataset: { testid: 'resources-table' } },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Resources id', 'Version', 'Candidate', 'Resources', 'Parent', 'Score', 'Created', 'Updated'].map(
                    (t) => h('th', { class: t === 'Version' || t === 'Score' ? 'num' : '' }, t),
                  ),
                ),
              ),
              h('tbody', null, rows),
            ),
        pager({
          offset,
          limit: PAGE_SIZE,
          total: page.total,
          onPage: (next) => ctx.navigate(next > 0 ? `${paths.resources()}?offset=${next}` : paths.resources()),
        }),
      );
      if (open) document.getElementById(`res-${open}`)?.scrollIntoView({ block: 'center' });
    } catch (error) {
      ctx.fail(body, error);
    }
  })();
};
