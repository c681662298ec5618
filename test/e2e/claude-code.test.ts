// The real Claude Code CLI (the pinned devDependency) trains through rollgate unchanged: `claude -p` with
// ANTHROPIC_BASE_URL on a rollout's attribution prefix, in front of the engine twin in Qwen3 mode with its agent
// policy. The model thinks, asks for a shell command twice (Claude Code's Bash tool, arguments made from the schema
// Claude Code sent), and answers once both outputs came back as tool_results. Every call is a span with the engine's
// token ids, tagged as the agent loop's by Claude Code's own request-class header.
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

const claude = harnessBinary('claude');
describe.skipIf(skipHarness(claude, 'Claude Code'))(`Claude Code through rollgate (${claude.detail})`, () => {
  const rig = harnessRig();

  it(
    'runs a thinking, multi-step tool loop; every call a main-loop span with token ids, one training row',
    async () => {
      const rid = rolloutId('claude');
      const dirs = harnessDirs('claude');
      const run = await runHarness({
        binary: claude.path,
        args: ['-p', AGENT_TASK.prompt, '--allowedTools', 'Bash'],
        dirs,
        timeoutS: HARNESS_TIMEOUT_S,
        env: {
          ANTHROPIC_BASE_URL: `${rig.h.gw.url}/rollout/${rid}/attempt/a1`,
          ANTHROPIC_API_KEY: 'agent-key',
          ANTHROPIC_MODEL: AGENT_MODEL,
          // An unknown model gets max_tokens 32000; prompt + output must fit the twin's 32768-token context.
          CLAUDE_CODE_MAX_OUTPUT_TOKENS: '2048',
          // Claude Code labels every call (x-claude-code-request-class), which rollgate records as the call's role.
          CLAUDE_CODE_GATEWAY_HINT_HEADERS: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_ERROR_REPORTING: '1',
          ...proxyEnv(rig.sink),
        },
      });
      expectAgentLoopFinished(run, dirs);

      const spans = await rig.h.spans(rid);
      const { main, auxiliary } = expectEveryCallRecorded({ spans, mock: rig.h.mock, rid });
      expect(auxiliary).toEqual([]);
      for (const span of main) {
        expect(span.attributes[A.ATTR_API]).toBe(A.API_VALUE_ANTHROPIC_MESSAGES);
        expect(span.attributes[A.ATTR_CALL_ROLE_SOURCE]).toBe('header');
      }
      // The rollout exports as one trainable row: the whole loop, prompt whole, auxiliary calls counted out.
      await expectOneTrainableRow({ store: rig.h.gw.gateway.store, rid, main, auxiliary });
      // The quiet settings left nothing for the proxy rig.sink to refuse.
      expect(rig.sink.attempts).toEqual([]);
    },
    HARNESS_TEST_TIMEOUT_MS,
  );
});
