// What the proxy benchmarks share (bench/proxy.ts, bench/proxy-recording.ts): the cores they pin processes to, the
// vLLM stand-in they forward to, the request bodies of their cells, and how they ask a proxy child over IPC.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The proxy under test runs here, alone. */
export const PROXY_CORE = '0';
/** The load generator and the stand-in share this core. */
export const LOAD_CORE = '1';
export const ROOT = new URL('..', import.meta.url).pathname;
export const AGENT_VIEW_SCENARIO = "16-chunk stream (agent's own body)";
const TSX = ['--import', 'tsx'];

export interface Scenario {
  readonly name: string;
  readonly path: string;
  readonly body: string;
  readonly stream: boolean;
  /**
   * A conversation's turns, each the whole history so far: every connection sends them in order, one per call, and
   * starts over after the last (`body` is then its first turn). Recorded calls go to one rollout per conversation.
   */
  readonly turns?: readonly string[];
}

export const AGENTIC_SCENARIO = 'agentic 30 turns';
/** The agentic cell: a conversation of this many turns whose history grows by about this much each turn. */
const AGENTIC_TURNS = 30;
const AGENTIC_TURN_CHARS = 6_600;

/**
 * The bodies of an agent's conversation as it re-sends it each turn: a system prompt, then per turn an observation
 * and the agent's action, about 200 KB by the last turn. Every turn asks for a short answer, so the cell measures
 * what the history costs the proxy (parsing, rewriting, recording the prompt), not generation.
 */
function agenticTurns(common: Readonly<Record<string, unknown>>): string[] {
  const half = AGENTIC_TURN_CHARS / 2;
  const history: { role: string; content: string }[] = [
    { role: 'system', content: 'You are an agent solving a task step by step with the tools you are given.' },
  ];
  const turns: string[] = [];
  for (let turn = 0; turn < AGENTIC_TURNS; turn++) {
    const observation = `observation ${turn}: ${'the shell printed a line of output. '.repeat(half / 36)}`;
    turns.push(
      JSON.stringify({ ...common, messages: [...history, { role: 'user', content: observation }], max_tokens: 4 }),
    );
    history.push({ role: 'user', content: observation });
    history.push({
      role: 'assistant',
      content: `action ${turn}: ${'run the next command and read it. '.repeat(half / 33)}`,
    });
  }
  return turns;
}

export function which(binary: string): string | null {
  const found = spawnSync('which', [binary]);
  return found.status === 0 ? found.stdout.toString().trim() : null;
}

export function pinned(command: string, args: string[], core: string): string[] {
  return which('taskset') === null ? [command, ...args] : ['taskset', '-c', core, command, ...args];
}

export function readLine(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const onData = (data: Buffer) => {
      buffer += data.toString();
      const match = pattern.exec(buffer);
      if (match) {
        child.stdout?.off('data', onData);
        resolve(match);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before printing ${pattern}`)));
  });
}

/** Asks a proxy child over IPC; the child's handlers each answer only their own messages. */
export function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise<T>((resolve) => {
    child.once('message', (answer) => resolve(answer as T));
    child.send(message);
  });
}

export async function startMock(extra: string[]): Promise<{ child: ChildProcess; url: string }> {
  const [command, ...args] = pinned(
    process.execPath,
    [...TSX, join(ROOT, 'test/servers/mock-vllm-cli.ts'), '--port', '0', '--max-model-len', '1000000', ...extra],
    LOAD_CORE,
  );
  const child = spawn(command as string, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const match = await readLine(child, /at (http:\/\/\S+\/v1)/);
  return { child, url: match[1] as string };
}

export function scenarios(): Scenario[] {
  // The bodies already carry what the gateway would add, so every target makes the stand-in do the same work.
  const common = { model: 'mock-model', return_token_ids: true, logprobs: true };
  return [
    {
      name: 'small non-stream',
      path: '/v1/chat/completions',
      stream: false,
      body: JSON.stringify({ ...common, messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 }),
    },
    {
      name: '16-chunk stream',
      path: '/v1/chat/completions',
      stream: true,
      body: JSON.stringify({
        ...common,
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 15,
        stream: true,
        stream_options: { include_usage: true },
      }),
    },
    {
      // What an agent sends: the gateway adds return_token_ids, logprobs and the usage chunk, and takes them out
      // of the answer again (the stand-in answers with one token per chunk: 15 token chunks, with logprobs).
      name: AGENT_VIEW_SCENARIO,
      path: '/v1/chat/completions',
      stream: true,
      body: JSON.stringify({
        model: 'mock-model',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 15,
        stream: true,
      }),
    },
    {
      // 100 KB of tool definitions: the proxy parses, rewrites and records them, while the stand-in's
      // tokenizer (one id per character) stays out of the measurement.
      name: '100 KB request',
      path: '/v1/chat/completions',
      stream: false,
      body: JSON.stringify({
        ...common,
        messages: [{ role: 'user', content: 'hello' }],
        tool_choice: 'none',
        tools: Array.from({ length: 100 }, (_, i) => ({
          type: 'function',
          function: { name: `tool_${i}`, description: 'd'.repeat(900), parameters: { type: 'object', properties: {} } },
        })),
        max_tokens: 4,
      }),
    },
    agentic(common),
  ];
}

function agentic(common: Readonly<Record<string, unknown>>): Scenario {
  const turns = agenticTurns(common);
  return { name: AGENTIC_SCENARIO, path: '/v1/chat/completions', stream: false, body: turns[0] as string, turns };
}

/** The median of the known values (null and NaN left out); null when none is known. */
export function median(values: readonly (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null && !Number.isNaN(v)).sort((a, b) => a - b);
  if (known.length === 0) return null;
  const mid = Math.floor(known.length / 2);
  return known.length % 2 === 1 ? (known[mid] as number) : ((known[mid - 1] as number) + (known[mid] as number)) / 2;
}
