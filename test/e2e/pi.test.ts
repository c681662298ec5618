// The real pi coding agent (the pinned devDependency `@mariozechner/pi-coding-agent`) trains through rollgate
// unchanged: `pi -p` with a custom provider in `~/.pi/agent/models.json` whose base URL is a rollout's attribution
// prefix, in front of the engine twin in Qwen3 mode with its agent policy. pi speaks each of the three APIs a
// provider can name: `openai-completions` (chat completions), `anthropic-messages` and `openai-responses` (on a pool
// with `responses: "via-chat"`). On each, the model thinks, asks for a shell command twice (pi's bash tool,
// arguments made from its schema), and answers; pi sends no call besides its loop.
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

/** pi's provider APIs, what rollgate records them as, and whether the base URL keeps `/v1`. */
const APIS = [
  { api: 'openai-completions', recordedAs: undefined, v1: true },
  // pi's Anthropic client appends /v1/messages itself, as Claude Code's does.
  { api: 'anthropic-messages', recordedAs: A.API_VALUE_ANTHROPIC_MESSAGES, v1: false },
  { api: 'openai-responses', recordedAs: A.API_VALUE_OPENAI_RESPONSES, v1: true },
] as const;

/** pi's models.json: one provider on the rollout's prefix; the key is read from the named variable. */
function piModels(options: { readonly api: string; readonly baseUrl: string }): string {
  const models = {
    providers: {
      rollgate: {
        baseUrl: options.baseUrl,
        api: options.api,
        apiKey: 'ROLLGATE_API_KEY',
        // contextWindow: the pool's context (pi compacts before it); maxTokens: what one answer may take.
        models: [{ id: AGENT_MODEL, reasoning: true, contextWindow: 32768, maxTokens: 4096 }],
      },
    },
  };
  return `${JSON.stringify(models, null, 2)}\n`;
}

const pi = harnessBinary('pi');
describe.skipIf(skipHarness(pi, 'pi'))(`pi through rollgate (${pi.detail})`, () => {
  const rig = harnessRig({ responses: 'via-chat' });

  for (const { api, recordedAs, v1 } of APIS) {
    it(
      `${api}: a thinking, multi-step tool loop; every call a main-loop span with token ids, one training row`,
      async () => {
        const rid = rolloutId('pi');
        const dirs = harnessDirs('pi');
        const agentDir = join(dirs.home, '.pi', 'agent');
        mkdirSync(agentDir, { recursive: true });
        const baseUrl = `${rig.h.gw.url}/rollout/${rid}/attempt/a1${v1 ? '/v1' : ''}`;
        writeFileSync(join(agentDir, 'models.json'), piModels({ api, baseUrl }));
        const run = await runHarness({
          binary: pi.path,
          args: ['-p', '--no-session', '--model', `rollgate/${AGENT_MODEL}`, AGENT_TASK.prompt],
          dirs,
          timeoutS: HARNESS_TIMEOUT_S,
          // PI_OFFLINE: no version check, package update check or install telemetry at start.
          env: { ROLLGATE_API_KEY: 'agent-key', PI_OFFLINE: '1', ...proxyEnv(rig.sink) },
        });
        expectAgentLoopFinished(run, dirs);

        const { main, auxiliary } = expectEveryCallRecorded({ spans: await rig.h.spans(rid), mock: rig.h.mock, rid });
        expect(auxiliary).toEqual([]);
        for (const span of main) expect(span.attributes[A.ATTR_API]).toBe(recordedAs);
        // The rollout exports as one trainable row: the whole loop, prompt whole, auxiliary calls counted out.
        await expectOneTrainableRow({ store: rig.h.gw.gateway.store, rid, main, auxiliary });
        expect(rig.sink.attempts).toEqual([]);
      },
      HARNESS_TEST_TIMEOUT_MS,
    );
  }
});
