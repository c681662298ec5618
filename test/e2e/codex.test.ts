// The real Codex CLI (the pinned devDependency) trains through rollgate unchanged: `codex exec` with a custom model
// provider (`wire_api = "responses"`) whose base URL is a rollout's attribution prefix, in front of the engine twin
// in Qwen3 mode with its agent policy, on a pool with `responses: "via-chat"`. Codex streams every call over the
// Responses API and sends its hosted web search and a namespace tool each time; the model thinks, asks for a shell
// command twice (Codex's exec_command, arguments made from Codex's schema), Codex runs each and sends its output
// back as a function_call_output, and the model answers. The spans carry token ids (which vLLM's own Responses
// streams do not give). Codex's built-in provider tries a WebSocket first; rollgate's 426 sends it straight to HTTP.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import {
  AGENT_MODEL,
  AGENT_TASK,
  expectAgentLoopFinished,
  expectEveryCallRecorded,
  expectOneTrainableRow,
  HARNESS_TEST_TIMEOUT_MS,
  HARNESS_TIMEOUT_S,
  harnessBinary,
  harnessDirs,
  harnessRig,
  proxyEnv,
  runHarness,
  skipHarness,
} from '../helpers/harness-process.js';
import { rolloutId } from '../integration/gateway/harness.js';

type Obj = Record<string, any>;

/** Codex's config: a custom provider (the way to train), or the built-in one pointed at the gateway. */
function codexConfig(options: { readonly baseUrl: string; readonly provider: 'custom' | 'builtin' }): string {
  const custom = options.provider === 'custom';
  return [
    `model = "${AGENT_MODEL}"`,
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
describe.skipIf(skipHarness(codex, 'Codex'))(`Codex through rollgate (${codex.detail})`, () => {
  const rig = harnessRig({ responses: 'via-chat' });

  /** Runs `codex exec` on the task for rollout `rid`; the built-in provider reads its key from CODEX_API_KEY. */
  async function runCodex(rid: string, provider: 'custom' | 'builtin') {
    const dirs = harnessDirs('codex');
    const codexHome = join(dirs.home, '.codex');
    mkdirSync(codexHome);
    const baseUrl = `${rig.h.gw.url}/rollout/${rid}/attempt/a1/v1`;
    writeFileSync(join(codexHome, 'config.toml'), codexConfig({ baseUrl, provider }));
    const run = await runHarness({
      binary: codex.path,
      // No sandbox: Codex's bubblewrap needs user namespaces, which CI runners often forbid; the commands the agent
      // policy runs are harmless and stay in the task's temp dir.
      args: ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', AGENT_TASK.prompt],
      dirs,
      timeoutS: HARNESS_TIMEOUT_S,
      env: { CODEX_HOME: codexHome, ROLLGATE_API_KEY: 'agent-key', CODEX_API_KEY: 'agent-key', ...proxyEnv(rig.sink) },
    });
    expectAgentLoopFinished(run, dirs);
    return run;
  }

  it(
    'runs a thinking, multi-step tool loop over streamed Responses; every call a span with token ids, one training row',
    async () => {
      const rid = rolloutId('codex');
      const before = rig.h.mock.requests.length;
      await runCodex(rid, 'custom');

      // The tools the engine rendered (on /tokenize under faithful history): Codex's namespace tool flattened, its
      // hosted web search left out.
      const first = rig.h.mock.requests
        .slice(before)
        .find((r) => Array.isArray((r.body as Obj | undefined)?.tools))?.body;
      const names = ((first as Obj).tools as Obj[]).map((t) => t.function.name);
      expect(names).toContain('exec_command');
      expect(names.some((n) => n.startsWith('multi_agent_v1.'))).toBe(true);
      expect(names).not.toContain('web_search');
      // Codex streams every call; so does the engine's generation for it.
      const generations = rig.h.mock.requests
        .slice(before)
        .filter((r) => r.headers['x-rollout-id'] === rid && r.path.endsWith('completions'));
      expect(generations.length).toBeGreaterThan(0);
      expect(generations.every((r) => r.stream === true)).toBe(true);

      const { main, auxiliary } = expectEveryCallRecorded({ spans: await rig.h.spans(rid), mock: rig.h.mock, rid });
      expect(auxiliary).toEqual([]);
      for (const span of main) expect(span.attributes[A.ATTR_API]).toBe(A.API_VALUE_OPENAI_RESPONSES);
      // The rollout exports as one trainable row: the whole loop, prompt whole, auxiliary calls counted out.
      await expectOneTrainableRow({ store: rig.h.gw.gateway.store, rid, main, auxiliary });
      expect(rig.sink.attempts).toEqual([]);
    },
    HARNESS_TEST_TIMEOUT_MS,
  );

  it(
    "the built-in provider's WebSocket attempt is refused with 426: Codex falls back to HTTP at once",
    async () => {
      const rid = rolloutId('codex');
      const run = await runCodex(rid, 'builtin');
      // Any other refusal (a 405) makes Codex retry the WebSocket five times, over seconds, before it falls back.
      expect(run.stderr).not.toContain('Reconnecting');
      const { main, auxiliary } = expectEveryCallRecorded({ spans: await rig.h.spans(rid), mock: rig.h.mock, rid });
      await expectOneTrainableRow({ store: rig.h.gw.gateway.store, rid, main, auxiliary });
    },
    HARNESS_TEST_TIMEOUT_MS,
  );
});
