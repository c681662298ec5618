// docs/failure-classes.md#50: a rollout deleted while one of its calls is generating. The agent still gets its full 200
// answer; the call's span has nowhere to go, so it is counted as an orphan (rollgate_orphan_calls_total) and
// logged at warn, and the gateway forgets the rollout: the next call on the same URL re-creates it when
// auto-create is on (and its span is stored), else is refused with an OpenAI-shaped 404 rollout_not_found.
// Every delete this process's store makes (over REST, or the store called directly as here) tells the attribution
// service at once; a delete by another replica is noticed by the span writer's not_found alone
// (test/integration/attribution/deleted-then-recreated.test.ts covers each delete path).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../src/logger.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const GENERATION_MS = 300;
let mock: MockVllm;

beforeAll(async () => {
  mock = await startMockVllm({ latencyMs: GENERATION_MS, ttftMs: GENERATION_MS });
});
afterAll(async () => {
  await mock?.close();
});

interface Warning {
  readonly message: string;
  readonly fields?: LogFields;
}

function recordingLogger(): Logger & { readonly warnings: Warning[] } {
  const warnings: Warning[] = [];
  const ignore = () => undefined;
  const logger: Logger & { readonly warnings: Warning[] } = {
    warnings,
    debug: ignore,
    info: ignore,
    error: ignore,
    warn(message, fields) {
      warnings.push(fields === undefined ? { message } : { message, fields });
    },
    child: () => logger,
  };
  return logger;
}

async function orphanCount(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('rollgate_orphan_calls_total '));
  expect(line, 'orphan counter exported').toBeDefined();
  return Number(line?.split(' ')[1]);
}

async function spanCount(gw: TestGateway, rid: string): Promise<number> {
  return (await gw.gateway.store.querySpans(rid)).items.length;
}

function agent(gw: TestGateway, rid: string, aid: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
}

/** Resolves once the stand-in has the call for this rollout, i.e. while it is generating. */
function generating(rid: string): Promise<unknown> {
  return mock.waitFor((r) => r.completedAt === undefined && r.rawBody.includes(`deleted ${rid}`), 5_000);
}

describe('auto-create on, deleted over REST', () => {
  let gw: TestGateway;
  const logger = recordingLogger();
  beforeAll(async () => {
    gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] }, { logger });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('keeps the answer, counts the orphan, and re-creates the rollout on the next call', async () => {
    const started = await gw.gateway.store.startRollout({ input: { task: 'g50' } });
    const rid = started.rollout_id;
    const aid = started.attempt.attempt_id;
    const client = agent(gw, rid, aid);
    const messages = [{ role: 'user' as const, content: `deleted ${rid}` }];
    const before = await orphanCount(gw);

    const call = client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 8 });
    await generating(rid);
    const deleted = await fetch(`${gw.url}/v1/agl/rollouts/${rid}`, { method: 'DELETE' });
    expect(await deleted.json()).toEqual({ deleted: true });
    const answer = await call;
    expect(answer.choices[0]?.finish_reason).toBe('length');
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(answer.usage?.completion_tokens).toBe(8);

    expect(await orphanCount(gw)).toBe(before + 1);
    expect(logger.warnings.filter((w) => w.fields?.rid === rid && w.fields.aid === aid)).toHaveLength(1);
    expect(await gw.gateway.store.getRolloutById(rid)).toBeNull();

    await client.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: 'again' }] });
    const recreated = await gw.gateway.store.getRolloutById(rid);
    expect(recreated?.rollout_id).toBe(rid);
    expect(recreated !== null && 'attempt' in recreated ? recreated.attempt.attempt_id : null).toBe(aid);
    expect(await spanCount(gw, rid)).toBe(1);
    expect(await orphanCount(gw)).toBe(before + 1);
  });
});

describe('auto-create off, deleted through the store directly, not over REST', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
      rollouts: { autoCreate: false },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('streams the full answer, counts the orphan, and refuses the next call with 404 rollout_not_found', async () => {
    const started = await gw.gateway.store.startRollout({ input: { task: 'g50' } });
    const rid = started.rollout_id;
    const aid = started.attempt.attempt_id;
    const client = agent(gw, rid, aid);
    const before = await orphanCount(gw);

    const streaming = client.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: `deleted ${rid}` }],
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    await generating(rid);
    expect(await gw.gateway.store.deleteRollout(rid)).toBe(true);
    const stream = await streaming;
    let text = '';
    let finish: string | null = null;
    let completionTokens: number | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
    expect(completionTokens).toBe(8);
    expect(await orphanCount(gw)).toBe(before + 1);

    const refused = await client.chat.completions
      .create({ model: 'mock-model', messages: [{ role: 'user', content: 'again' }] })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    const apiError = refused as InstanceType<typeof OpenAI.NotFoundError>;
    expect(apiError.status).toBe(404);
    expect(apiError.code).toBe('rollout_not_found');
    expect(apiError.type).toBe('invalid_request_error');
    expect(await gw.gateway.store.getRolloutById(rid)).toBeNull();
  });
});
