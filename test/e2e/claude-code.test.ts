// The real Claude Code CLI (the pinned devDependency) trains through rollgate unchanged: `claude -p` with
// ANTHROPIC_BASE_URL on a rollout's attribution prefix, in front of the engine twin in Qwen3 mode. The scripted
// model asks for one harmless shell command; Claude Code runs it and sends its output back as a tool_result; the
// model finishes. The rollout's spans carry token ids and sequence ids in order, each is tagged as the agent
// loop's (Claude Code's own request-class header), and the RL adapters turn them into training rows.
import { readFileSync } from 'node:fs';
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

/** The model: with Bash offered and no tool result yet, run the command; after the result, finish. */
const respond = shellTaskModel({
  tool: 'Bash',
  args: { command: SHELL_TASK.command, description: 'Write hi to out.txt' },
});

const claude = harnessBinary('claude');
if (!claude.runnable) console.warn(`Skipping the Claude Code end-to-end test: ${claude.detail}`);

describe.skipIf(!claude.runnable)(`Claude Code through rollgate (${claude.detail})`, () => {
  let h: Harness;
  let sink: ProxySink;
  beforeAll(async () => {
    h = await startHarness({ tokenizer: 'qwen3', respond });
    sink = await startProxySink();
  });
  afterAll(async () => {
    await sink?.close();
    await h?.close();
  });

  it('runs a tool call end to end; every call is a main-loop span with token ids, in sequence order', async () => {
    const rid = rolloutId('claude');
    const dirs = harnessDirs('claude');
    const chatBefore = chatCallsSince(h.mock, 0).length;
    const run = await runHarness({
      binary: claude.path,
      args: ['-p', SHELL_TASK.prompt, '--allowedTools', 'Bash'],
      dirs,
      timeoutS: 25,
      env: {
        ANTHROPIC_BASE_URL: `${h.gw.url}/rollout/${rid}/attempt/a1`,
        ANTHROPIC_API_KEY: 'agent-key',
        ANTHROPIC_MODEL: 'mock-model',
        // An unknown model gets max_tokens 32000; prompt + output must fit the twin's 32768-token context.
        CLAUDE_CODE_MAX_OUTPUT_TOKENS: '2048',
        // Claude Code labels every call (x-claude-code-request-class), which rollgate records as the call's role.
        CLAUDE_CODE_GATEWAY_HINT_HEADERS: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
        ...proxyEnv(sink),
      },
    });
    expect(run.code, `claude failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain(SHELL_TASK.finalText);
    // The command really ran, in the task's directory.
    expect(readFileSync(join(dirs.work, 'out.txt'), 'utf8')).toBe('hi\n');

    // What the engine served: two chat calls, the second carrying the Bash call and its output as a tool message.
    const chats = chatCallsSince(h.mock, chatBefore);
    expectShellRoundTrip(chats, { tool: 'Bash', argName: 'command' });

    const spans = (await h.spans(rid)).filter((s) => s.attributes[A.ATTR_API] === A.API_VALUE_ANTHROPIC_MESSAGES);
    for (const span of spans) {
      expect(span.attributes[A.ATTR_CALL_ROLE]).toBe(A.CALL_ROLE_VALUE_MAIN);
      expect(span.attributes[A.ATTR_CALL_ROLE_SOURCE]).toBe('header');
      expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe(A.STREAM_STATUS_VALUE_OK);
    }
    // Token ids on both calls: the prompts the twin rendered and the tokens it generated.
    expectTrainableSpans({ spans, chats, mock: h.mock });
    // The quiet settings left nothing for the proxy sink to refuse.
    expect(sink.attempts).toEqual([]);
  });
});
