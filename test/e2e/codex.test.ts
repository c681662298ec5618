// The real Codex CLI (the pinned devDependency) trains through rollgate unchanged: `codex exec` with a custom model
// provider (`wire_api = "responses"`) whose base URL is a rollout's attribution prefix, in front of the engine twin
// in Qwen3 mode, on a pool with `responses: "via-chat"`. Codex streams every call over the Responses API and sends
// its hosted web search and a namespace tool each time; the scripted model asks for one harmless shell command,
// Codex runs it and sends its output back as a function_call_output, the model finishes. The spans carry token ids
// (which vLLM's own Responses streams do not give) and sequence ids in order.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../src/adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../../src/adapters/triplets.js';
import * as A from '../../src/tracing/attributes.js';
import {
  harnessBinary,
  harnessDirs,
  type ProxySink,
  proxyEnv,
  runHarness,
  startProxySink,
} from '../helpers/harness-process.js';
import { type Harness, rolloutId, startHarness } from '../integration/gateway/harness.js';
import type { MockChatMessage, MockRespond } from '../servers/mock-vllm.js';

type Obj = Record<string, any>;

const COMMAND = 'echo hi | tee out.txt';
const FINAL_TEXT = 'Wrote out.txt.';

/** The model: with exec_command offered and no tool result yet, run the command; after the result, finish. */
const respond: MockRespond = (prompt, ctx) => {
  const messages: MockChatMessage[] = prompt.messages ?? [];
  const offersShell = ctx.tools.some((t) => (t as Obj).function?.name === 'exec_command');
  if (offersShell && !messages.some((m) => m.role === 'tool')) {
    return { toolCalls: [{ name: 'exec_command', arguments: { cmd: COMMAND } }] };
  }
  return FINAL_TEXT;
};

function codexConfig(baseUrl: string): string {
  return [
    'model = "mock-model"',
    'model_provider = "rollgate"',
    'check_for_update_on_startup = false',
    '[analytics]',
    'enabled = false',
    // The plugin marketplace sync goes to github.com and chatgpt.com.
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    '[model_providers.rollgate]',
    'name = "rollgate"',
    `base_url = "${baseUrl}"`,
    'env_key = "ROLLGATE_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
}

const codex = harnessBinary('codex');
if (!codex.runnable) console.warn(`Skipping the Codex end-to-end test: ${codex.detail}`);

describe.skipIf(!codex.runnable)(`Codex through rollgate (${codex.detail})`, () => {
  let h: Harness;
  let sink: ProxySink;
  beforeAll(async () => {
    h = await startHarness({ tokenizer: 'qwen3', respond }, {}, { responses: 'via-chat' });
    sink = await startProxySink();
  });
  afterAll(async () => {
    await sink?.close();
    await h?.close();
  });

  it('runs a tool call end to end over streamed Responses; the spans carry token ids in sequence order', async () => {
    const rid = rolloutId('codex');
    const dirs = harnessDirs('codex');
    const codexHome = join(dirs.home, '.codex');
    mkdirSync(codexHome);
    writeFileSync(join(codexHome, 'config.toml'), codexConfig(`${h.gw.url}/rollout/${rid}/attempt/a1/v1`));
    const chatBefore = h.mock.requests.filter((r) => r.path === '/v1/chat/completions').length;
    const run = await runHarness({
      binary: codex.path,
      args: ['exec', '--skip-git-repo-check', '--sandbox', 'workspace-write', 'Write hi to out.txt with the shell.'],
      dirs,
      timeoutS: 25,
      env: { CODEX_HOME: codexHome, ROLLGATE_API_KEY: 'agent-key', ...proxyEnv(sink) },
    });
    expect(run.code, `codex failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain(FINAL_TEXT);
    expect(readFileSync(join(dirs.work, 'out.txt'), 'utf8')).toBe('hi\n');

    // What the engine served: chat calls, Codex's namespace tool flattened, its hosted web search left out.
    const chats = h.mock.requests.filter((r) => r.path === '/v1/chat/completions').slice(chatBefore);
    expect(chats).toHaveLength(2);
    const first = chats[0]?.body as Obj;
    const names = (first.tools as Obj[]).map((t) => t.function.name);
    expect(names).toContain('exec_command');
    expect(names.some((n) => n.startsWith('multi_agent_v1.'))).toBe(true);
    expect(first.stream).toBe(true);
    const second = chats[1]?.body as Obj;
    const asked = (second.messages as Obj[]).find((m) => m.role === 'assistant' && m.tool_calls);
    const call = asked?.tool_calls[0];
    expect(call?.function.name).toBe('exec_command');
    expect(JSON.parse(call?.function.arguments).cmd).toBe(COMMAND);
    const result = (second.messages as Obj[]).find((m) => m.role === 'tool');
    expect(result?.tool_call_id).toBe(call?.id);
    expect(JSON.stringify(result?.content)).toContain('hi');

    const spans = (await h.spans(rid)).filter((s) => s.attributes[A.ATTR_API] === A.API_VALUE_OPENAI_RESPONSES);
    expect(spans).toHaveLength(2);
    const seqs = spans.map((s) => s.sequence_id);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(2);
    for (const span of spans) {
      expect(span.attributes[A.ATTR_CALL_ROLE]).toBe(A.CALL_ROLE_VALUE_MAIN);
      expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe(A.STREAM_STATUS_VALUE_OK);
      expect(span.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    }
    const drops: TrainingDrop[] = [];
    const triplets = spansToTriplets(spans, { onDropped: (d) => drops.push(d) });
    expect(drops).toEqual([]);
    expect(triplets.map((t) => t.metadata.sequence_id)).toEqual(seqs);
    const ledger = chats.map((r) => h.mock.ledger.byResponseId(r.responseId ?? '')[0]);
    triplets.forEach((t, i) => {
      expect(t.prompt.token_ids).toEqual(ledger[i]?.promptIds);
      expect(t.response.token_ids).toEqual(ledger[i]?.tokenIds);
      expect(t.response.logprobs).toHaveLength(t.response.token_ids.length);
    });
    expect(spansToTrajectories(spans).length).toBeGreaterThan(0);
    expect(sink.attempts).toEqual([]);
  });
});
