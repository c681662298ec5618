// The agent policy: a respond() that behaves like a tool-using, reasoning model, so a real coding harness (Claude
// Code, Codex, opencode, pi) runs its whole tool loop against the twin. Each turn it thinks, then either calls a
// tool or, once the conversation holds `steps` tool results (or no tool is offered), answers in plain text.
// The tool is the offered shell when there is one (a tool named like a shell that takes a command), else any tool
// that takes a command, else the first; its arguments are made from the tool's own JSON schema (schema-args.ts),
// so the harness accepts them. The shell command appends the step's number to STEPS_FILE in the harness's working
// directory, so a test sees every step really ran.
//
// The state comes from the request on the chat and Responses routes (tools, tool messages) and from the prompt
// text when the twin generates from token ids (faithful history sends only ids): the rendered Qwen3 prompt is read
// back (qwen3-prompt.ts) and the answer is the raw text a Qwen3 model writes, think block and hermes tool call
// included, for the gateway's parsers to split. Everything is a function of the prompt, so answers are
// reproducible, and every answer goes through the twin's tokenizer like any other.
import type { MockChatMessage } from './chat-template.js';
import { readQwen3Prompt } from './qwen3-prompt.js';
import { defaultRespond, renderOutput } from './respond.js';
import { argumentsFor, commandProperty } from './schema-args.js';
import type { MockReplyObject, MockRespond } from './types.js';
import { isRecord } from './util.js';

/** Where the shell command of each step writes its line (relative: the harness's working directory). */
export const STEPS_FILE = 'agent-steps.txt';

/** The line step `k` (1-based) appends to STEPS_FILE. */
export function stepLine(k: number): string {
  return `step-${k}`;
}

/** The plain answer that ends the loop after `toolResults` tool results. */
export function agentFinalText(toolResults: number): string {
  return `Done after ${toolResults} tool steps.`;
}

export interface AgentPolicyOptions {
  /** Tool calls before the plain answer (default 2). */
  readonly steps?: number;
}

interface OfferedTool {
  readonly name: string;
  readonly parameters: unknown;
}

/** What the policy decides from: the same on every route. */
interface AgentState {
  readonly tools: readonly unknown[];
  readonly toolResults: number;
}

const SHELL_NAMES = /bash|shell|exec_command|terminal|run_command|execute_command/i;

function offered(tools: readonly unknown[]): OfferedTool[] {
  const out: OfferedTool[] = [];
  for (const tool of tools) {
    if (isRecord(tool) && isRecord(tool.function) && typeof tool.function.name === 'string') {
      out.push({ name: tool.function.name, parameters: tool.function.parameters });
    }
  }
  return out;
}

/** The shell when one is offered, else a tool that takes a command, else the first tool. */
export function pickTool(tools: readonly unknown[]): OfferedTool | undefined {
  const candidates = offered(tools);
  return (
    candidates.find((t) => SHELL_NAMES.test(t.name) && commandProperty(t.parameters) !== undefined) ??
    candidates.find((t) => commandProperty(t.parameters) !== undefined) ??
    candidates[0]
  );
}

/** The turn the policy takes in `state`: reasoning, then a tool call or the final answer. */
function agentTurn(state: AgentState, steps: number): MockReplyObject {
  const tool = state.toolResults < steps ? pickTool(state.tools) : undefined;
  if (!tool) {
    const reasoning =
      state.tools.length === 0 && state.toolResults === 0
        ? 'No tool is offered, so I answer directly.'
        : `${state.toolResults} tool steps are done, so I can answer now.`;
    return { reasoning, content: agentFinalText(state.toolResults) };
  }
  const k = state.toolResults + 1;
  const args = argumentsFor(tool.parameters, {
    command: `echo ${stepLine(k)} | tee -a ${STEPS_FILE}`,
    text: `Step ${k} of the task`,
    path: '.',
  });
  return {
    reasoning: `Step ${k} of ${steps}: I will call ${tool.name} to make progress on the task.`,
    toolCalls: [{ name: tool.name, arguments: args }],
  };
}

/** The function `tool_choice` forces (`{type: "function", function: {name}}`, or the Responses API's `{name}`). */
function forcedName(choice: unknown): string | undefined {
  if (!isRecord(choice)) return undefined;
  if (isRecord(choice.function) && typeof choice.function.name === 'string') return choice.function.name;
  return typeof choice.name === 'string' ? choice.name : undefined;
}

/** The request's state: `tool_choice: "none"` offers no tool, a forced function only that one. */
function requestState(
  messages: readonly MockChatMessage[] | undefined,
  tools: readonly unknown[],
  toolChoice: unknown,
): AgentState {
  const forced = forcedName(toolChoice);
  const usable =
    toolChoice === 'none'
      ? []
      : forced === undefined
        ? tools
        : tools.filter((t) => isRecord(t) && isRecord(t.function) && t.function.name === forced);
  return { tools: usable, toolResults: (messages ?? []).filter((m) => m.role === 'tool').length };
}

/** The agent policy as the twin's respond(). */
export function agentPolicy(options: AgentPolicyOptions = {}): MockRespond {
  const steps = options.steps ?? 2;
  return (prompt, ctx) => {
    if (prompt.endpoint !== 'completions') {
      return agentTurn(requestState(prompt.messages, ctx.tools, ctx.body.tool_choice), steps);
    }
    const read = readQwen3Prompt(prompt.text);
    // A plain completion (not a chat prompt rendered to ids) is continued as the default model continues it.
    if (!read) return defaultRespond(prompt, ctx);
    const turn = agentTurn(read, steps);
    // Token in, text out: the raw generation, as a Qwen3 model writes it after the prompt's generation prompt.
    return renderOutput(turn, { style: 'hermes', reasoning: read.thinkingClosed ? null : (turn.reasoning ?? null) })
      .text;
  };
}
