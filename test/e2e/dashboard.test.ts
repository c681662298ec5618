// The dashboard end to end: a memory-store gateway with seeded rollouts, spans and resources, driven in
// headless Chromium. Each page is checked for content and screenshotted (set ROLLGATE_SCREENSHOT_DIR to
// keep the PNGs; otherwise they go to a temp dir that is removed afterwards).
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR_RESPONSE_TOKEN_IDS } from '../../src/contracts/span-attributes.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { AGENT_TOOLS } from '../helpers/tool-agent.js';
import { FAITHFUL, type HistoryHarness, startHistoryHarness } from '../integration/history/harness.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';
import { CHROMIUM_PATH, type Chromium, isChromiumAvailable, launchChromium } from './helpers/chromium.js';
import { ensureDashboardBuilt } from './helpers/dashboard-build.js';
import {
  ANSWER_TOKENS,
  addRound,
  FEATURED_REWARD,
  FEATURED_ROLLOUT,
  PROMPT_TOKEN_IDS,
  QUESTION,
  RESOURCES,
  type SeededDashboard,
  seedDashboard,
  seedLongRollout,
} from './helpers/dashboard-seed.js';

const hasChromium = isChromiumAvailable();
if (!hasChromium) {
  console.warn(
    `\n!!! SKIPPING the dashboard e2e test: no Chromium at ${CHROMIUM_PATH}. ` +
      'Install it (apt-get install chromium) or set ROLLGATE_CHROMIUM; CI installs it. !!!\n',
  );
}

const ADMIN_KEY = 'dashboard-admin-key-0123456789abcdef';
const AGENT_KEY = 'dashboard-agent-key-0123456789abcdef';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** A blank or broken page compresses to a few KiB; a rendered table or chart does not. */
const MIN_SCREENSHOT_BYTES = 12_000;

let shotDir = '';
let keepShots = false;

async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(shotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  const png = await readFile(path);
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE), `${name}.png is a PNG`).toBe(true);
  expect(png.byteLength, `${name}.png has content`).toBeGreaterThan(MIN_SCREENSHOT_BYTES);
}

/** Waits through locators (Playwright's string predicates are eval'd, which the page's CSP forbids). */
async function waitForCount(page: Page, selector: string, count: number): Promise<void> {
  await expect.poll(() => page.locator(selector).count(), { timeout: 15_000 }).toBe(count);
}

/** Reward cells fill in after the table; wait until none still shows the loading mark. */
async function waitForRewards(page: Page): Promise<void> {
  await expect
    .poll(async () => (await page.locator('[data-testid=reward]').allTextContents()).includes('…'), { timeout: 15_000 })
    .toBe(false);
}

async function texts(page: Page, selector: string): Promise<string[]> {
  return page.locator(selector).allTextContents();
}

describe.skipIf(!hasChromium)('dashboard in headless Chromium', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let mock: MockVllm;
  let authGw: TestGateway;
  let browser: Chromium;
  let seeded: SeededDashboard;
  /** A gateway with a faithful-history pool (engine twin, real Qwen3 template) for the history panel. */
  let history: HistoryHarness | undefined;
  const pageErrors: string[] = [];
  const foreignRequests: string[] = [];

  async function openPage(baseUrl: string, path = '/'): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('request', (request) => {
      const url = request.url();
      const ours = [gw.url, authGw.url, ...(history ? [history.gw.url] : [])];
      if (!ours.some((own) => url.startsWith(own)) && !url.startsWith('data:')) foreignRequests.push(url);
    });
    page.setDefaultTimeout(15_000);
    await page.goto(`${baseUrl}${path}`);
    return page;
  }

  beforeAll(async () => {
    keepShots = process.env.ROLLGATE_SCREENSHOT_DIR !== undefined;
    shotDir = process.env.ROLLGATE_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'rollgate-dashboard-shots-')));
    await mkdir(shotDir, { recursive: true });
    await ensureDashboardBuilt();
    mock = await startMockVllm();
    gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] });
    authGw = await startTestGateway({ auth: { adminKeys: [ADMIN_KEY], agentKeys: [AGENT_KEY] } });
    seeded = await seedDashboard(gw.gateway.store);
    await seedDashboard(authGw.gateway.store);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await history?.close();
    await gw?.close();
    await mock?.close();
    await authGw?.close();
    if (!keepShots && shotDir) await rm(shotDir, { recursive: true, force: true });
  });

  it('lists rollouts with status chips, attempts, workers and final rewards, 25 per page', async () => {
    const page = await openPage(gw.url);
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', 25);
    expect(await page.locator('[data-testid=pager-info]').textContent()).toContain(`1–25 of ${seeded.totalRollouts}`);
    const featured = page.locator(`tr[data-rollout-id="${FEATURED_ROLLOUT}"]`);
    await waitForRewards(page);
    const cells = await featured.locator('td').allTextContents();
    // Rollout, Status, Mode, Attempts, Duration, Reward, Worker, Started
    expect(cells[0]).toBe(FEATURED_ROLLOUT);
    expect(cells[1]).toBe('succeeded');
    expect(cells[2]).toBe('train');
    expect(cells[3]).toBe('2');
    expect(cells[5]).toBe(FEATURED_REWARD.toFixed(3));
    expect(cells[6]).toBe('worker-b');
    expect(await featured.locator('.chip').getAttribute('data-status')).toBe('succeeded');
    await screenshot(page, '01-rollouts');

    await page.locator('.pager [data-action=next]').click();
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', seeded.totalRollouts - 25);
    expect(page.url()).toContain('offset=25');
    expect(await page.locator('[data-testid=pager-info]').textContent()).toContain(
      `26–${seeded.totalRollouts} of ${seeded.totalRollouts}`,
    );
    expect(await page.locator('.pager [data-action=next]').isDisabled()).toBe(true);
    await page.close();
  });

  it('filters by status and by rollout id, keeping the filter in the URL', async () => {
    const page = await openPage(gw.url);
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', 25);
    await page.locator('.status-filter [data-status=failed]').click();
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', seeded.failedRollouts);
    expect(page.url()).toContain('status=failed');
    expect(new Set(await page.locator('[data-testid=rollouts-table] tbody .chip').allTextContents())).toEqual(
      new Set(['failed']),
    );
    await page.locator('.status-filter [data-status=queuing]').click();
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', seeded.failedRollouts + 11);
    await waitForRewards(page);
    await screenshot(page, '02-rollouts-filtered');

    await page.goto(`${gw.url}/rollouts`);
    await page.locator('input[name=q]').fill('featured');
    await page.locator('input[name=q]').press('Enter');
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', 1);
    expect(page.url()).toContain('q=featured');
    expect(await texts(page, '[data-testid=rollouts-table] tbody td:first-child')).toEqual([FEATURED_ROLLOUT]);
    await page.close();
  });

  it('a rollout longer than one page of spans shows its true span count and final reward, and says what it counted', async () => {
    await seedLongRollout(gw.gateway.store, { rid: 'ro-long', calls: 520, reward: 0.25 });
    const page = await openPage(gw.url, '/rollouts/ro-long');
    await page.locator('[data-testid=timeline]').waitFor();
    expect(await page.locator('[data-testid=span-count] .metric-value').textContent()).toBe('521');
    expect(await page.locator('[data-testid=final-reward] .metric-value').textContent()).toBe((0.25).toFixed(3));
    // The calls counted are those of the loaded page, and the label says so instead of passing them off as all.
    expect(await page.locator('[data-testid=llm-calls] .metric-value').textContent()).toBe('500');
    expect(await page.locator('[data-testid=llm-calls]').textContent()).toContain('first 500 of 521 spans');
    await page.close();
  });

  it('shows a rollout with its attempts and its spans in sequence order on a timeline', async () => {
    const page = await openPage(gw.url);
    await page.locator(`tr[data-rollout-id="${FEATURED_ROLLOUT}"] a`).click();
    await page.locator('[data-testid=timeline]').waitFor();
    expect(page.url()).toBe(`${gw.url}/rollouts/${FEATURED_ROLLOUT}`);
    expect(await texts(page, '[data-testid=attempts-table] tbody .chip')).toEqual(['failed', 'succeeded']);
    expect(await texts(page, '[data-testid=attempts-table] tbody td:nth-child(4)')).toEqual(['worker-a', 'worker-b']);
    const seqs = (await page
      .locator('[data-testid=timeline] tr.span-row')
      .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))))) as number[];
    expect(seqs).toEqual([1, 2, 3, 4]);
    expect(
      await page
        .locator('[data-testid=timeline] tr.span-row')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind'))),
    ).toEqual(['llm', 'llm', 'llm', 'reward']);
    expect(await page.locator('[data-testid=final-reward] .metric-value').textContent()).toBe(
      FEATURED_REWARD.toFixed(3),
    );
    expect(await page.locator('[data-testid=llm-calls] .metric-value').textContent()).toBe('3');
    expect(await page.locator('[data-testid=prompt-tokens-total] .metric-value').textContent()).toBe(
      String(PROMPT_TOKEN_IDS.length * 3),
    );
    await screenshot(page, '03-rollout-detail');

    // Narrowing to the second attempt leaves its two calls and the reward.
    await page.locator('.attempt-filter a', { hasText: '#2' }).click();
    await waitForCount(page, '[data-testid=timeline] tr.span-row', 3);
    expect(
      await page
        .locator('[data-testid=timeline] tr.span-row')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-span-id'))),
    ).toEqual([...seeded.featuredSpanIds]);
    // A reward row opens its attributes in place.
    await page.locator('[data-testid=timeline] tr.span-row[data-kind=reward]').click();
    expect(await page.locator('tr.span-detail:not(.hidden) pre').textContent()).toContain(
      'agentlightning.reward.0.value',
    );
    await page.close();
  });

  it('shows one call: messages beside prompt/response token ids, low-probability tokens outlined', async () => {
    // A deep link (as after a reload) is served by the SPA fallback.
    const page = await openPage(gw.url, `/rollouts/${FEATURED_ROLLOUT}`);
    const firstCall = seeded.featuredSpanIds[0] ?? '';
    await page.locator(`[data-testid=timeline] tr[data-span-id="${firstCall}"] .span-name a`).click();
    await page.locator('[data-testid=response-tokens]').waitFor();
    expect(page.url()).toContain(`/rollouts/${FEATURED_ROLLOUT}/spans/${firstCall}`);

    const messages = page.locator('[data-testid=messages]');
    expect(await messages.locator('.msg').evaluateAll((els) => els.map((e) => e.getAttribute('data-role')))).toEqual([
      'system',
      'user',
      'assistant',
    ]);
    expect(await messages.textContent()).toContain(QUESTION);
    expect(await messages.locator('.msg[data-role=assistant]').textContent()).toContain('17 * 23 = 391.');

    const tokens = page.locator('[data-testid=response-tokens] .tok');
    expect(await tokens.count()).toBe(ANSWER_TOKENS.length);
    expect(await tokens.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-id'))))).toEqual(
      ANSWER_TOKENS.map((t) => t.id),
    );
    expect(await tokens.allTextContents()).toEqual(ANSWER_TOKENS.map((t) => t.text.replace(/ /g, '·')));
    // Default threshold p < 0.1: only " 391" (logprob -3.2, p 0.04) is outlined.
    expect(
      await page
        .locator('[data-testid=response-tokens] .tok.low')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-id'))),
    ).toEqual(['391']);
    expect(await page.locator('[data-testid=low-count]').textContent()).toBe('1 below p 0.1');
    // Heat colouring: every token with a logprob has a background.
    const backgrounds = await tokens.evaluateAll((els) => els.map((e) => (e as HTMLElementLike).style.background));
    expect(backgrounds.every((b) => b.startsWith('rgb') || b.startsWith('hsl'))).toBe(true);
    expect(await page.locator('[data-testid=prompt-tokens] .tok').count()).toBe(PROMPT_TOKEN_IDS.length);
    await screenshot(page, '04-call');

    // A looser threshold (p < 0.5) also outlines " =" (logprob -0.9, p 0.41).
    await page.locator('select[name=threshold]').selectOption('0.5');
    await waitForCount(page, '[data-testid=response-tokens] .tok.low', 2);
    // The ids view shows the raw token ids.
    await page.locator('#show-ids').check();
    expect(await tokens.allTextContents()).toEqual(ANSWER_TOKENS.map((t) => String(t.id)));
    await page.close();
  });

  it('lists resources with their versions, candidate lineage and scores', async () => {
    const page = await openPage(gw.url);
    await page.locator('[data-nav=resources]').click();
    await waitForCount(page, '[data-testid=resources-table] tbody tr.clickable', 3);
    const v2 = page.locator(`tr[data-resources-id="${RESOURCES.v2}"]`);
    expect(await v2.locator('[data-testid=candidate]').textContent()).toBe('v2 · round 2');
    expect(await v2.locator('[data-testid=parent]').textContent()).toBe('v1');
    expect(await v2.locator('[data-testid=score]').textContent()).toBe('0.800');
    expect(await v2.locator('.chip').textContent()).toBe('latest');
    expect(await page.locator(`tr[data-resources-id="${RESOURCES.base}"] [data-testid=parent]`).textContent()).toBe(
      '–',
    );
    await v2.click();
    expect(await page.locator('tr.resource-detail:not(.hidden) pre.template').textContent()).toContain(
      'Show the multiplication',
    );
    await screenshot(page, '05-resources');

    // The parent link jumps to (and opens) the parent snapshot.
    await v2.locator('[data-testid=parent] a').click();
    await page.locator(`tr[data-resources-id="${RESOURCES.v1}"].selected`).waitFor();
    await page.close();
  });

  it('charts mean reward per round and picks up new rounds while open', async () => {
    const page = await openPage(gw.url, '/algorithm?refresh=1');
    await page.locator('[data-testid=reward-chart] svg.chart').waitFor();
    expect(
      await page.locator('svg.chart .series').evaluateAll((els) => els.map((e) => e.getAttribute('data-series'))),
    ).toEqual(['train', 'val']);
    const groups = await texts(page, '[data-testid=reward-groups] tbody td:first-child');
    expect(new Set(groups)).toEqual(new Set(['step 1', 'step 2', 'step 3']));
    const round1Val = page
      .locator('[data-testid=reward-groups] tbody tr', { hasText: 'step 1' })
      .filter({ hasText: 'val' });
    expect(await round1Val.locator('td:last-child').textContent()).toBe('0.300');
    expect(await page.locator('.status-count[data-status=failed] .count').textContent()).toBe(
      String(seeded.failedRollouts),
    );
    expect(await page.locator('.status-count[data-status=queuing] .count').textContent()).toBe('11');
    await screenshot(page, '06-algorithm');

    await addRound(gw.gateway.store, { round: 4, reward: 0.95 });
    await expect
      .poll(() => texts(page, '[data-testid=reward-groups] tbody td:first-child'), { timeout: 15_000 })
      .toContain('step 4');
    await page.close();
  });

  it('shows a call the gateway proxied and recorded: every response token with its logprob', async () => {
    const rid = 'ro-proxied-call';
    const agent = new OpenAI({
      baseURL: `${gw.url}/rollout/${rid}/attempt/at-proxied/v1`,
      apiKey: 'agent',
      maxRetries: 0,
    });
    const stream = await agent.chat.completions.create({
      model: 'mock-model',
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Name a prime number.' },
      ],
      max_tokens: 12,
      stream: true,
    });
    let answer = '';
    for await (const chunk of stream) answer += chunk.choices[0]?.delta?.content ?? '';
    const [recorded] = (await gw.gateway.store.querySpans(rid)).items;
    const ids = recorded?.attributes[ATTR_RESPONSE_TOKEN_IDS];
    expect(Array.isArray(ids) && ids.length > 0).toBe(true);

    const page = await openPage(gw.url, `/rollouts/${rid}`);
    await page.locator('[data-testid=timeline] tr.span-row[data-kind=llm] .span-name a').click();
    await page.locator('[data-testid=response-tokens]').waitFor();
    const tokens = page.locator('[data-testid=response-tokens] .tok');
    expect(await tokens.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-id'))))).toEqual(ids);
    const logprobs = await tokens.evaluateAll((els) => els.map((e) => e.getAttribute('data-logprob')));
    expect(logprobs.every((lp) => lp !== null && Number.isFinite(Number(lp)))).toBe(true);
    expect(await page.locator('[data-testid=messages] .msg[data-role=assistant]').textContent()).toContain(answer);
    expect(await page.locator('[data-testid=messages] .msg[data-role=user]').textContent()).toContain(
      'Name a prime number.',
    );
    await screenshot(page, '08-proxied-call');
    await page.close();
  });

  it('asks for a key when the gateway answers 401, then sends it on every call', async () => {
    const page = await openPage(authGw.url);
    const prompt = page.locator('[data-testid=key-prompt]');
    await prompt.locator('form').waitFor({ state: 'visible' });
    expect(await prompt.locator('.prompt-reason').textContent()).toContain('requires an API key');
    await page.locator('[data-testid=auth-required]').waitFor();
    await screenshot(page, '07-key-prompt');

    await page.locator('#api-key').fill('not-the-key');
    await page.locator('#api-key').press('Enter');
    await prompt.locator('form').waitFor({ state: 'visible' });
    expect(await prompt.locator('.prompt-reason').textContent()).toContain('rejected the saved key');

    // An agent key is a valid key without the admin scope the store API needs.
    await page.locator('#api-key').fill(AGENT_KEY);
    await page.locator('#api-key').press('Enter');
    await expect
      .poll(() => prompt.locator('.prompt-reason').textContent(), { timeout: 15_000 })
      .toContain('Enter an admin key');
    expect(await prompt.locator('form').isVisible()).toBe(true);

    await page.locator('#api-key').fill(ADMIN_KEY);
    await page.locator('#api-key').press('Enter');
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', 25);
    expect(await prompt.isHidden()).toBe(true);

    // The key is kept in this browser: a reload reads the store without asking again.
    await page.reload();
    await waitForCount(page, '[data-testid=rollouts-table] tbody tr', 25);
    await waitForRewards(page);
    expect(await prompt.isHidden()).toBe(true);
    expect(await page.locator('[data-testid=reward][data-value]').count()).toBeGreaterThan(0);
    await page.close();
  });

  it('shows fork and heal rates per faithful-history model above the rollouts', async () => {
    history = await startHistoryHarness();
    const client = history.client('dashboard-history');
    const ask = async (messages: OpenAI.ChatCompletionMessageParam[]) =>
      (await client.chat.completions.create({ model: FAITHFUL, messages, tools: AGENT_TOOLS })).choices[0]?.message;
    const start: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'How deep is the bay?' }];
    const a1 = await ask(start);
    const next = (a: OpenAI.ChatCompletionMessage | undefined): OpenAI.ChatCompletionMessageParam[] => [
      { role: 'assistant', content: a?.content ?? null, ...(a?.tool_calls ? { tool_calls: a.tool_calls } : {}) },
      { role: 'tool', tool_call_id: a?.tool_calls?.[0]?.id ?? 'none', content: 'a result' },
    ];
    await ask([...start, ...next(a1)]);
    // An edited first message: the history no longer continues what was served, a fork.
    await ask([{ role: 'user', content: 'How wide is the bay?' }, ...next(a1)]);
    const stats = (await (await fetch(`${history.gw.url}/metrics/history`)).json()) as {
      models: Array<{ model: string; fork_rate: number; heal_rate: number }>;
    };
    const faithful = stats.models.find((m) => m.model === FAITHFUL);
    expect(faithful?.fork_rate).toBeGreaterThan(0);

    const page = await openPage(history.gw.url);
    const row = page.locator(`[data-testid=history-health] tr[data-model="${FAITHFUL}"]`);
    await waitForCount(page, `[data-testid=history-health] tr[data-model="${FAITHFUL}"]`, 1);
    expect(await row.locator('[data-testid=fork-rate]').textContent()).toBe(
      `${((faithful?.fork_rate ?? 0) * 100).toFixed(1)}%`,
    );
    expect(await row.locator('[data-testid=heal-rate]').textContent()).toBe(
      `${((faithful?.heal_rate ?? 0) * 100).toFixed(1)}%`,
    );
    // The seeded gateway has no faithful pool: no panel there.
    const plain = await openPage(gw.url);
    await waitForCount(plain, '[data-testid=rollouts-table] tbody tr', 25);
    expect(await plain.locator('[data-testid=history-health]').count()).toBe(0);
    await screenshot(page, '09-history-health');
    await page.close();
    await plain.close();
  });

  it('loaded nothing from outside the gateway and raised no page errors', () => {
    expect(foreignRequests).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/** The slice of a DOM element the assertions above read, typed without pulling the DOM lib into Node's tsconfig. */
interface HTMLElementLike {
  readonly style: { readonly background: string };
}
