// The dashboard over a store of more than 100k rollouts, in headless Chromium: a rollouts page costs one request
// for its rewards (not one per row), the algorithm page one summary request per refresh (not a request per status
// plus a full list plus a reward request per rollout), and every API answer comes back quickly.
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PRIMARY_REWARD_NAME,
  REWARD_SPAN_NAME,
  rewardNameAttr,
  rewardValueAttr,
} from '../../src/contracts/span-attributes.js';
import type { EnqueueRolloutRequest, LightningStore, SpanInput } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { numberedSpan } from '../helpers/numbered-span.js';
import { CHROMIUM_PATH, type Chromium, isChromiumAvailable, launchChromium } from './helpers/chromium.js';
import { ensureDashboardBuilt } from './helpers/dashboard-build.js';

const hasChromium = isChromiumAvailable();
if (!hasChromium) console.warn(`\n!!! SKIPPING the dashboard scale test: no Chromium at ${CHROMIUM_PATH}. !!!\n`);

const HISTORY = 100_000;
/** The newest rollouts ran with an attempt and posted a reward, like a live training run. */
const WITH_REWARDS = 300;
/** One answer of the store API, even on a shared 2-core CI box; the 20 ms event-loop target is measured in bench/. */
const MAX_RESPONSE_MS = 1_000;

interface ApiCall {
  readonly path: string;
  readonly ms: number;
}

/** Every request the page makes to the gateway's APIs, with the time its answer took. */
function recordApiCalls(page: Page, base: string): ApiCall[] {
  const calls: ApiCall[] = [];
  page.on('requestfinished', (request: Request) => {
    const url = new URL(request.url());
    if (!request.url().startsWith(base) || !/^\/(v1|metrics)\//.test(url.pathname)) return;
    const timing = request.timing();
    calls.push({ path: url.pathname, ms: timing.responseEnd - timing.requestStart });
  });
  return calls;
}

async function seed(store: LightningStore): Promise<string[]> {
  for (let i = 0; i < HISTORY; i += 10_000) {
    const batch: EnqueueRolloutRequest[] = Array.from({ length: 10_000 }, (_, j) => ({
      input: { task: i + j },
      mode: 'train',
      metadata: { step: Math.floor((i + j) / 1000) },
    }));
    const queued = await store.enqueueManyRollouts(batch);
    await Promise.all(queued.map((r) => store.updateRollout(r.rollout_id, { status: 'succeeded' })));
  }
  const rewarded: string[] = [];
  for (let i = 0; i < WITH_REWARDS; i++) {
    const r = await store.startRollout({ input: { task: `live-${i}` }, mode: 'train', metadata: { step: 200 } });
    const reward = numberedSpan({
      rid: r.rollout_id,
      aid: r.attempt.attempt_id,
      n: 1,
      name: REWARD_SPAN_NAME,
      attributes: { [rewardNameAttr(0)]: PRIMARY_REWARD_NAME, [rewardValueAttr(0)]: (i % 10) / 10 },
    }) as unknown as SpanInput;
    await store.addSpan(reward);
    await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
    rewarded.push(r.rollout_id);
  }
  return rewarded;
}

describe.skipIf(!hasChromium)('dashboard at 100k+ rollouts', { timeout: 120_000 }, () => {
  let gw: TestGateway;
  let browser: Chromium;
  let rewarded: string[];

  beforeAll(async () => {
    await ensureDashboardBuilt();
    gw = await startTestGateway();
    rewarded = await seed(gw.gateway.store);
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  it('the rollouts table asks for its page and all of its rewards in two requests', async () => {
    const page = await browser.context.newPage();
    const calls = recordApiCalls(page, gw.url);
    await page.goto(`${gw.url}/rollouts?limit=100`);
    await expect
      .poll(() => page.locator('[data-testid=rollouts-table] tbody tr').count(), { timeout: 30_000 })
      .toBe(100);
    await expect
      .poll(async () => (await page.locator('[data-testid=reward]').allTextContents()).includes('…'), {
        timeout: 30_000,
      })
      .toBe(false);
    // Newest first: the rewarded rollouts fill the page, each cell with its own reward.
    const newest = rewarded[rewarded.length - 1] as string;
    expect(await page.locator(`tr[data-rollout-id="${newest}"] [data-testid=reward]`).getAttribute('data-value')).toBe(
      String(((WITH_REWARDS - 1) % 10) / 10),
    );
    const store = calls.filter((c) => c.path.startsWith('/v1/agl/'));
    expect(store.filter((c) => c.path === '/v1/agl/rollouts')).toHaveLength(1);
    expect(store.filter((c) => c.path === '/v1/agl/rewards')).toHaveLength(1);
    expect(store.filter((c) => c.path === '/v1/agl/spans')).toHaveLength(0);
    for (const call of store) expect(call.ms, call.path).toBeLessThan(MAX_RESPONSE_MS);
    console.info(`dashboard rollouts page at ${HISTORY + WITH_REWARDS} rollouts: ${JSON.stringify(store)}`);
    await page.close();
  });

  it('the algorithm page refreshes with one summary request', async () => {
    const page = await browser.context.newPage();
    const calls = recordApiCalls(page, gw.url);
    await page.goto(`${gw.url}/algorithm?refresh=1`);
    await page.locator('[data-testid=reward-chart] svg.chart').waitFor({ timeout: 30_000 });
    expect(await page.locator('.status-count[data-status=succeeded] .count').textContent()).toMatch(/^100[,.\s]?300$/);
    // Let a few live refreshes happen (one per second).
    await expect
      .poll(() => calls.filter((c) => c.path === '/v1/agl/summary').length, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(3);
    const store = calls.filter((c) => c.path.startsWith('/v1/agl/'));
    expect(new Set(store.map((c) => c.path))).toEqual(new Set(['/v1/agl/summary']));
    for (const call of store) expect(call.ms, call.path).toBeLessThan(MAX_RESPONSE_MS);
    const groups = await page.locator('[data-testid=reward-groups] tbody td:first-child').allTextContents();
    expect(groups).toContain('step 200');
    console.info(
      `dashboard algorithm page at ${HISTORY + WITH_REWARDS} rollouts: ${JSON.stringify(store.slice(0, 5))}`,
    );
    await page.close();
  });
});
