// A rollout deleted and re-created under the same id is checked again at once by every entry point: the agent's
// OTLP spans and its proxied calls are stored right away. Each delete path is covered: the store API, the v1
// API, and the store itself (what retention pruning or an operator script does, with no route involved). The
// re-created rollout is only enqueued, so the agent's attempt id is new to the store: an entry point that still
// trusted its memory of the old rollout would write into an attempt that no longer exists.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

/** Collects ended spans, so each export's result can be read from the official exporter's callback. */
class Collect implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** One agent span over OTLP/HTTP JSON with the official exporter; resolves with the export's result code. */
async function exportSpan(rid: string, aid: string, name: string): Promise<number> {
  const collect = new Collect();
  const provider = new BasicTracerProvider({ spanProcessors: [collect] });
  provider
    .getTracer('agent')
    .startSpan(name, { attributes: { 'agentlightning.rollout_id': rid, 'agentlightning.attempt_id': aid } })
    .end();
  const exporter = new OTLPTraceExporter({ url: `${gw.url}/v1/traces` });
  try {
    return await new Promise<number>((resolve) => exporter.export(collect.spans, (result) => resolve(result.code)));
  } finally {
    await exporter.shutdown();
    await provider.shutdown();
  }
}

const EXPORT_SUCCESS = 0;

async function call(rid: string, aid: string): Promise<void> {
  const agent = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
  const answer = await agent.chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
}

async function spanNames(rid: string): Promise<string[]> {
  return (await gw.gateway.store.querySpans(rid)).items.map((span) => span.name).sort();
}

const DELETE_PATHS: ReadonlyArray<readonly [string, (rid: string) => Promise<void>]> = [
  [
    'the store API',
    async (rid) => {
      const res = await fetch(`${gw.url}/v1/agl/rollouts/${rid}`, { method: 'DELETE' });
      expect(await res.json()).toEqual({ deleted: true });
    },
  ],
  [
    'the v1 API',
    async (rid) => {
      const res = await fetch(`${gw.url}/api/rollouts/${rid}`, { method: 'DELETE' });
      expect(res.status).toBe(204);
    },
  ],
  [
    'the store itself',
    async (rid) => {
      expect(await gw.gateway.store.deleteRollout(rid)).toBe(true);
    },
  ],
];

describe.each(DELETE_PATHS)('deleted through %s, then re-created', (_path, remove) => {
  it('stores the next OTLP export and the next proxied call at once', async () => {
    const rid = `recreated-${_path.replaceAll(' ', '-')}`;
    const aid = 'attempt-1';
    // First life: a call and an OTLP export make every entry point know the pair.
    await call(rid, aid);
    expect(await exportSpan(rid, aid, 'first-life')).toBe(EXPORT_SUCCESS);
    expect((await spanNames(rid)).filter((name) => name === 'first-life')).toHaveLength(1);

    await remove(rid);
    await gw.gateway.store.enqueueRollout({ input: { task: 'again' }, rollout_id: rid });

    expect(await exportSpan(rid, aid, 'second-life')).toBe(EXPORT_SUCCESS);
    expect(await spanNames(rid)).toEqual(['second-life']);
    await call(rid, aid);
    const names = await spanNames(rid);
    expect(names).toHaveLength(2);
    expect(names).toContain('second-life');
    const attempts = await gw.gateway.store.queryAttempts(rid);
    expect(attempts.items.map((attempt) => attempt.attempt_id)).toEqual([aid]);
  });
});
