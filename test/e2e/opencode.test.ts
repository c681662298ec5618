// The real opencode CLI (`opencode-ai`, pinned and installed once by harness-process.ts) trains through rollgate unchanged: `opencode run`
// with a custom provider in its config file whose base URL is a rollout's attribution prefix, in front of the
// engine twin in Qwen3 mode with its agent policy. opencode reaches a model through one of its AI SDK provider
// packages, and each speaks another API to rollgate: `@ai-sdk/openai-compatible` chat completions,
// `@ai-sdk/anthropic` the Messages API, `@ai-sdk/openai` the Responses API (on a pool with `responses: "via-chat"`).
// On each, the model thinks, asks for a shell command twice (opencode's bash tool, arguments made from its schema),
// and answers; opencode's session-title call beside the loop is recorded as auxiliary.
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

/** The provider packages opencode bundles, the API each speaks, and where its base URL points. */
const PROVIDERS = [
  { npm: '@ai-sdk/openai-compatible', api: undefined },
  { npm: '@ai-sdk/anthropic', api: A.API_VALUE_ANTHROPIC_MESSAGES },
  { npm: '@ai-sdk/openai', api: A.API_VALUE_OPENAI_RESPONSES },
] as const;

/** opencode's config: one custom provider on the rollout's prefix, its model's context and output limits. */
function opencodeConfig(options: { readonly npm: string; readonly baseUrl: string }): string {
  const config = {
    $schema: 'https://opencode.ai/config.json',
    model: `rollgate/${AGENT_MODEL}`,
    autoupdate: false,
    share: 'disabled',
    provider: {
      rollgate: {
        npm: options.npm,
        name: 'rollgate',
        options: { baseURL: options.baseUrl, apiKey: '{env:ROLLGATE_API_KEY}' },
        // Without limits opencode asks for 32000 output tokens, more than the context leaves.
        models: { [AGENT_MODEL]: { limit: { context: 32768, output: 4096 } } },
      },
    },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

const opencode = harnessBinary('opencode');
describe.skipIf(skipHarness(opencode, 'opencode'))(`opencode through rollgate (${opencode.detail})`, () => {
  const rig = harnessRig({ responses: 'via-chat' });

  for (const provider of PROVIDERS) {
    it(
      `${provider.npm}: a thinking, multi-step tool loop; every call a span with token ids, one training row`,
      async () => {
        const rid = rolloutId('opencode');
        const dirs = harnessDirs('opencode');
        const configDir = join(dirs.home, '.config', 'opencode');
        mkdirSync(configDir, { recursive: true });
        const baseUrl = `${rig.h.gw.url}/rollout/${rid}/attempt/a1/v1`;
        writeFileSync(join(configDir, 'opencode.json'), opencodeConfig({ npm: provider.npm, baseUrl }));
        const run = await runHarness({
          binary: opencode.path,
          args: ['run', AGENT_TASK.prompt],
          dirs,
          timeoutS: HARNESS_TIMEOUT_S,
          env: {
            ROLLGATE_API_KEY: 'agent-key',
            OPENCODE_DISABLE_AUTOUPDATE: '1',
            // models.dev's catalogue, LSP servers and default plugins are fetched at start unless turned off.
            OPENCODE_DISABLE_MODELS_FETCH: '1',
            OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
            OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
            // opencode installs its plugin package into the config dir at every start; offline, npm fails at once.
            npm_config_offline: 'true',
            ...proxyEnv(rig.sink),
          },
        });
        expectAgentLoopFinished(run, dirs);

        const { main, auxiliary } = expectEveryCallRecorded({ spans: await rig.h.spans(rid), mock: rig.h.mock, rid });
        for (const span of main) expect(span.attributes[A.ATTR_API]).toBe(provider.api);
        // The session title, asked for beside the first turn, by its known system prompt.
        expect(auxiliary).toHaveLength(1);
        expect(auxiliary[0]?.attributes[A.ATTR_CALL_ROLE]).toBe(A.CALL_ROLE_VALUE_AUXILIARY);
        expect(auxiliary[0]?.attributes[A.ATTR_CALL_ROLE_SOURCE]).toBe('prompt');
        // The rollout exports as one trainable row: the whole loop, prompt whole, auxiliary calls counted out.
        await expectOneTrainableRow({ store: rig.h.gw.gateway.store, rid, main, auxiliary });
        expect(rig.sink.attempts).toEqual([]);
      },
      HARNESS_TEST_TIMEOUT_MS,
    );
  }
});
