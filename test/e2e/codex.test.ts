// The real Codex CLI (the pinned devDependency) trains through rollgate unchanged: `codex exec` with a custom model
// provider (`wire_api = "responses"`) whose base URL is a rollout's attribution prefix, in front of the engine twin
// in Qwen3 mode, on a pool with `responses: "via-chat"`. Codex streams every call over the Responses API and sends
// its hosted web search and a namespace tool each time; the scripted model asks for one harmless shell command,
// Codex runs it and sends its output back as a function_call_output, the model finishes. The spans carry token ids
// (which vLLM's own Responses streams do not give) and sequence ids in order. Codex's built-in provider tries a
// WebSocket first; rollgate's 426 sends it straight to HTTP.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import {
  chatCallsSince,
  expectShellRoundTrip,
  expectTrainableSpans,
  harnessBinary,
  harnessDirs,
  type ProxySink,
  proxyEnv,
  runHarness,
  SHELL_TASK,
  shellTaskModel,
  startProxySink,
} from '../helpers/harness-process.js';
import { type Harness, rolloutId, startHarness } from '../integration/gateway/harness.js';

type Obj = Record<string, any>;

/** The model: with exec_command offered and no tool result yet, run the command; after the result, finish. */
const respond = shellTaskModel({ tool: 'exec_command', args: { cmd: SHELL_TASK.command } });

/** Codex's config: a custom provider (the way to train), or the built-in one pointed at the gateway. */
function codexConfig(options: { readonly baseUrl: string; readonly provider: 'custom' | 'builtin' }): string {
  const custom = options.provider === 'custom';
  return [
    'model = "mock-model"',
    custom ? 'model_provider = "rollgate"' : `openai_base_url = "${options.baseUrl}"`,
    'check_for_update_on_startup = false',
    '[analytics]',
    'enabled = false',
    // The plugin marketplace sync goes to github.com and chatgpt.com.
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    ...(custom
      ? [
          '[model_providers.rollgate]',
          'name = "rollgate"',
          `base_url = "${options.baseUrl}"`,
          'env_key = "ROLLGATE_API_KEY"',
          'wire_api = "responses"',
        ]
      : []),
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

  /** Runs `codex exec` on the task for rollout `rid`; the built-in provider reads its key from CODEX_API_KEY. */
  async function runCodex(rid: string, provider: 'custom' | 'builtin') {
    const dirs = harnessDirs('codex');
    const codexHome = join(dirs.home, '.codex');
    mkdirSync(codexHome);
    const baseUrl = `${h.gw.url}/rollout/${rid}/attempt/a1/v1`;
    writeFileSync(join(codexHome, 'config.toml'), codexConfig({ baseUrl, provider }));
    const run = await runHarness({
      binary: codex.path,
      // No sandbox: Codex's bubblewrap needs user namespaces, which CI runners often forbid; the one command the
      // scripted model runs is harmless and stays in the task's temp dir.
      args: ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', SHELL_TASK.prompt],
      dirs,
      timeoutS: 25,
      env: { CODEX_HOME: codexHome, ROLLGATE_API_KEY: 'agent-key', CODEX_API_KEY: 'agent-key', ...proxyEnv(sink) },
    });
    expect(run.code, `codex failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain(SHELL_TASK.finalText);
    expect(readFileSync(join(dirs.work, 'out.txt'), 'utf8')).toBe('hi\n');
    return run;
  }

  it('runs a tool call end to end over streamed Responses; the spans carry token ids in sequence order', async () => {
    const rid = rolloutId('codex');
    const chatBefore = chatCallsSince(h.mock, 0).length;
    await runCodex(rid, 'custom');

    // What the engine served: chat calls, Codex's namespace tool flattened, its hosted web search left out.
    const chats = chatCallsSince(h.mock, chatBefore);
    expectShellRoundTrip(chats, { tool: 'exec_command', argName: 'cmd' });
    const first = chats[0]?.body as Obj;
    const names = (first.tools as Obj[]).map((t) => t.function.name);
    expect(names).toContain('exec_command');
    expect(names.some((n) => n.startsWith('multi_agent_v1.'))).toBe(true);
    expect(first.stream).toBe(true);

    const spans = (await h.spans(rid)).filter((s) => s.attributes[A.ATTR_API] === A.API_VALUE_OPENAI_RESPONSES);
    for (const span of spans) {
      expect(span.attributes[A.ATTR_CALL_ROLE]).toBe(A.CALL_ROLE_VALUE_MAIN);
      expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe(A.STREAM_STATUS_VALUE_OK);
      expect(span.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    }
    expectTrainableSpans({ spans, chats, mock: h.mock });
    expect(sink.attempts).toEqual([]);
  });

  it("the built-in provider's WebSocket attempt is refused with 426: Codex falls back to HTTP at once", async () => {
    const rid = rolloutId('codex');
    const run = await runCodex(rid, 'builtin');
    // Any other refusal (a 405) makes Codex retry the WebSocket five times, over seconds, before it falls back.
    expect(run.stderr).not.toContain('Reconnecting');
    expect((await h.spans(rid)).filter((s) => s.attributes[A.ATTR_API] === A.API_VALUE_OPENAI_RESPONSES)).toHaveLength(
      2,
    );
  });
});
