// The dashboard shell: navigation, client-side routing, the key prompt, and error display.
// It reads the public store API (/v1/agl/*) and the RL hub's state (/v1/rl/state) with the key the user typed.
import './styles.css';
import { ApiError, createStoreApi, isAbortError, isAuthError } from './api.js';
import { createKeyStore } from './api-key.js';
import { h, replaceChildren } from './dom.js';
import { createKeyPrompt } from './key-prompt.js';
import type { Page, PageContext } from './page.js';
import { algorithmPage } from './pages/algorithm.js';
import { callPage } from './pages/call.js';
import { resourcesPage } from './pages/resources.js';
import { rolloutDetailPage } from './pages/rollout-detail.js';
import { rolloutsPage } from './pages/rollouts.js';
import { swapsPage } from './pages/swaps.js';
import { createRewardCache } from './reward-cache.js';
import { matchRoute, paths, type RouteName } from './router.js';

const notFoundPage: Page = (root) => {
  replaceChildren(
    root,
    h('h1', null, 'Not found'),
    h('p', null, h('a', { href: paths.rollouts() }, 'Back to rollouts')),
  );
};

const PAGES: Record<RouteName, Page> = {
  rollouts: rolloutsPage,
  rollout: rolloutDetailPage,
  call: callPage,
  resources: resourcesPage,
  algorithm: algorithmPage,
  swaps: swapsPage,
  'not-found': notFoundPage,
};

const NAV: ReadonlyArray<{ label: string; href: string; routes: readonly RouteName[] }> = [
  { label: 'Rollouts', href: paths.rollouts(), routes: ['rollouts', 'rollout', 'call'] },
  { label: 'Resources', href: paths.resources(), routes: ['resources'] },
  { label: 'Algorithm', href: paths.algorithm(), routes: ['algorithm'] },
  { label: 'Swaps', href: paths.swaps(), routes: ['swaps'] },
];

function start(): void {
  const app = document.getElementById('app');
  if (!app) return;
  const keys = createKeyStore(window.localStorage);
  const api = createStoreApi({ keys });
  const rewards = createRewardCache(api);
  let current: AbortController | null = null;

  const keyState = h('span', { class: 'key-state muted' });
  const prompt = createKeyPrompt({ keys, onSaved: () => render() });
  const navLinks = NAV.map((item) =>
    h('a', { href: item.href, class: 'nav-link', dataset: { nav: item.label.toLowerCase() } }, item.label),
  );
  const main = h('main', { class: 'content' });
  replaceChildren(
    app,
    h(
      'header',
      { class: 'topbar' },
      h('a', { href: '/', class: 'brand' }, 'rollgate'),
      h('nav', null, navLinks),
      h('div', { class: 'spacer' }),
      keyState,
      h(
        'button',
        {
          type: 'button',
          class: 'btn small',
          dataset: { action: 'key' },
          on: { click: () => prompt.open('Enter or change the key this dashboard sends.') },
        },
        'API key',
      ),
    ),
    main,
  );

  function fail(root: HTMLElement, error: unknown): void {
    if (isAbortError(error)) return;
    if (isAuthError(error)) {
      const had = keys.get() !== null;
      prompt.open(
        error.status === 403
          ? `The key was accepted but may not read the store (403: ${error.message}). Enter an admin key.`
          : had
            ? `The gateway rejected the saved key (401: ${error.message}).`
            : 'This gateway requires an API key.',
      );
      replaceChildren(
        root,
        h(
          'div',
          { class: 'error-box', dataset: { testid: 'auth-required' } },
          'An API key is required to read the store.',
        ),
      );
      return;
    }
    const message = error instanceof ApiError ? `${error.message} (HTTP ${error.status})` : String(error);
    replaceChildren(root, h('div', { class: 'error-box' }, message));
  }

  function render(): void {
    current?.abort();
    const controller = new AbortController();
    current = controller;
    const route = matchRoute(window.location.pathname, window.location.search);
    keyState.textContent = keys.get() === null ? 'no key' : 'key set';
    for (const [i, link] of navLinks.entries())
      link.classList.toggle('active', NAV[i]?.routes.includes(route.name) ?? false);
    const ctx: PageContext = {
      api,
      rewards,
      route,
      signal: controller.signal,
      navigate,
      fail,
    };
    main.replaceChildren();
    PAGES[route.name](main, ctx);
  }

  function navigate(url: string, options: { replace?: boolean } = {}): void {
    if (options.replace) window.history.replaceState(null, '', url);
    else window.history.pushState(null, '', url);
    render();
    if (!options.replace) window.scrollTo(0, 0);
  }

  // Same-origin links are handled here so page changes keep the app (and its caches) alive.
  document.addEventListener('click', (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    const anchor = (event.target as Element | null)?.closest('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
    const url = new URL(anchor.href, window.location.href);
    if (url.origin !== window.location.origin) return;
    event.preventDefault();
    if (url.pathname === window.location.pathname && url.search === window.location.search && url.hash) {
      window.history.pushState(null, '', url.href);
      render();
      return;
    }
    navigate(url.pathname + url.search + url.hash);
  });
  window.addEventListener('popstate', () => render());
  window.addEventListener('unhandledrejection', (event) => {
    if (isAbortError(event.reason)) event.preventDefault();
  });
  render();
}

start();
