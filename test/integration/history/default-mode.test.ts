// history.mode left unset: a pool of vLLM backends serving a model whose name tells its family (Qwen/Qwen3-8B) runs
// faithful history, the same model behind SGLang runs as sent; the start log says so per pool, with the reason, and
// /admin/pools shows it. The calls themselves follow: token-in generation on the vLLM pool, the chat route on SGLang.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { AGENT_TOOLS, toolLoopModel } from '../../helpers/tool-agent.js';
import { type MockVllm, startEngineTwin } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

const SERVED = 'Qwen/Qwen3-8B';

/** A logger that keeps every line, for reading the start log. */
function keepingLogger(lines: Array<{ message: string; fields: LogFields }>): Logger {
  const log = (message: string, fields: LogFields = {}) => {
    lines.push({ message, fields });
  };
  const logger: Logger = { debug: log, info: log, warn: log, error: log, child: () => logger };
  return logger;
}

let vllm: MockVllm;
let sglang: MockVllm;
let gw: TestGateway;
const lines: Array<{ message: string; fields: LogFields }> = [];

beforeAll(async () => {
  const twin = { tokenizer: 'qwen3' as const, reasoning: true, respond: toolLoopModel(), model: SERVED };
  vllm = await startEngineTwin(twin);
  sglang = await startEngineTwin({ ...twin, dialect: 'sglang' });
  gw = await startTestGateway(
    {
      models: [
        { name: 'policy', upstreamModel: SERVED, backends: [{ url: vllm.url }] },
        { name: 'policy-sglang', upstreamModel: SERVED, backends: [{ url: sglang.url, type: 'sglang' }] },
        {
          name: 'policy-as-sent',
          upstreamModel: SERVED,
          backends: [{ url: vllm.url }],
          history: { mode: 'as-sent' },
        },
      ],
    },
    { logger: keepingLogger(lines) },
  );
});
afterAll(async () => {
  await gw?.close();
  await vllm?.close();
  await sglang?.close();
});

describe('the default history mode', () => {
  it('is faithful on a vLLM pool of a known family, as-sent on SGLang or when configured, in one start line each', async () => {
    const started = lines.filter((l) => l.message === 'history mode').map((l) => l.fields);
    const expected = [
      {
        model: 'policy',
        mode: 'faithful',
        family: 'qwen3',
        reason: `default: vLLM backends; the served model "${SERVED}" is qwen3`,
      },
      {
        model: 'policy-sglang',
        mode: 'as-sent',
        family: null,
        reason: 'default: backends not all vLLM (faithful needs /tokenize and token-in generation)',
      },
      { model: 'policy-as-sent', mode: 'as-sent', family: null, reason: 'history.mode "as-sent"' },
    ];
    expect(started).toEqual(expected);
    const pools = (await (await fetch(`${gw.url}/admin/pools`)).json()) as {
      pools: Array<{ model: string; history: unknown }>;
    };
    expect(pools.pools.map(({ model, history }) => ({ model, ...(history as object) }))).toEqual(expected);
  });

  it("serves each pool's chat calls accordingly", async () => {
    const rid = rolloutId('default-mode');
    const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'What is the tallest tree?' }];
    for (const model of ['policy', 'policy-sglang', 'policy-as-sent']) {
      await client.chat.completions.create({ model, messages, tools: AGENT_TOOLS });
    }
    const spans = (await gw.gateway.store.querySpans(rid)).items.sort((a, b) => a.sequence_id - b.sequence_id);
    expect(spans.map((s) => [s.attributes[A.ATTR_HISTORY_MODE], s.attributes[A.ATTR_UPSTREAM_URL]])).toEqual([
      ['faithful', `${vllm.url}/completions`],
      [undefined, `${sglang.url}/chat/completions`],
      [undefined, `${vllm.url}/chat/completions`],
    ]);
  });
});
