// Runs an attempt as an operating-system process: any agent in any language, configured by environment.
//
// Exit status 0 => succeeded; anything else (code, signal, could not start) => failed, with the details stored
// on the attempt. On timeout or shutdown the whole process tree is stopped (SIGTERM, SIGKILL after a grace).

import type { JsonObject } from '../store/core/types.js';
import { normalizeGatewayUrl } from './attempt-urls.js';
import { type OutputStream, spawnProcessTree } from './process-tree.js';
import type { AttemptContext, AttemptExecutor, AttemptOutcome } from './types.js';

export const DEFAULT_KILL_GRACE_MS = 5_000;

/**
 * Variables only the runner itself may see: the store credentials must not reach agent code.
 * (`OPENAI_API_KEY` is always overwritten with the agent key.)
 */
const RUNNER_ONLY_ENV = ['ROLLGATE_API_KEY', 'ROLLGATE_AGENT_KEY'] as const;

export interface ProcessExecutorOptions {
  /** argv of the agent: `['python', 'agent.py']`; no shell is involved unless you name one. */
  readonly command: readonly string[];
  readonly cwd?: string;
  /** Inherited environment (default `process.env`); the attempt's variables are added on top. */
  readonly baseEnv?: NodeJS.ProcessEnv;
  /** SIGTERM-to-SIGKILL grace when a tree is stopped (default 5 s). */
  readonly killGraceMs?: number;
  readonly gatewayUrl: string;
  /** Receives the agent's output line by line; absent => output is discarded. */
  readonly onLine?: (ctx: AttemptContext, line: string, stream: OutputStream) => void;
}

/** The environment one attempt's process gets (documented in docs/runner.md). */
export function attemptEnv(ctx: AttemptContext, options: { gatewayUrl: string; baseEnv: NodeJS.ProcessEnv }) {
  const env: NodeJS.ProcessEnv = { ...options.baseEnv };
  for (const name of RUNNER_ONLY_ENV) delete env[name];
  env.OPENAI_BASE_URL = ctx.baseUrl;
  env.OPENAI_API_KEY = ctx.apiKey;
  env.ROLLGATE_GATEWAY_URL = normalizeGatewayUrl(options.gatewayUrl);
  env.ROLLGATE_ROLLOUT_ID = ctx.rolloutId;
  env.ROLLGATE_ATTEMPT_ID = ctx.attemptId;
  env.ROLLGATE_TASK = JSON.stringify(ctx.task);
  env.ROLLGATE_REWARD_URL = ctx.rewardUrl;
  env.ROLLGATE_WORKER_ID = ctx.workerId;
  if (ctx.rollout.mode) env.ROLLGATE_MODE = ctx.rollout.mode;
  if (ctx.model) env.ROLLGATE_MODEL = ctx.model;
  if (ctx.resources) env.ROLLGATE_RESOURCES = JSON.stringify(ctx.resources);
  return env;
}

export interface ProcessExecutor extends AttemptExecutor {
  /**
   * SIGKILLs every agent process group still alive, synchronously: the last resort on the runner's own exit
   * (uncaught error, `process.exit`), because detached groups would otherwise outlive it.
   */
  killAllNow(): void;
}

export function createProcessExecutor(options: ProcessExecutorOptions): ProcessExecutor {
  const [command, ...args] = options.command;
  if (command === undefined || command === '') throw new TypeError('the agent command is empty');
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const baseEnv = options.baseEnv ?? process.env;
  const liveGroups = new Set<number>();

  const runAgentProcess = async (ctx: AttemptContext): Promise<AttemptOutcome> => {
    const onLine = options.onLine;
    const tree = spawnProcessTree({
      command,
      args,
      cwd: options.cwd,
      env: attemptEnv(ctx, { gatewayUrl: options.gatewayUrl, baseEnv }),
      onLine: onLine ? (line, stream) => onLine(ctx, line, stream) : undefined,
    });
    const pgid = tree.pid;
    if (pgid !== null) liveGroups.add(pgid);
    const stop = (): void => void tree.terminate({ graceMs: killGraceMs });
    if (ctx.signal.aborted) stop();
    else ctx.signal.addEventListener('abort', stop, { once: true });

    const exit = await tree.exited;
    ctx.signal.removeEventListener('abort', stop);
    // The agent is gone; so must be anything it left running in its group (background jobs, pools).
    await (ctx.signal.aborted ? tree.terminate({ graceMs: killGraceMs }) : tree.reap({ graceMs: killGraceMs }));
    if (pgid !== null) liveGroups.delete(pgid);

    const details: JsonObject = { pid: tree.pid, exit_code: exit.code, signal: exit.signal };
    if (exit.spawnError !== null) details.error = `could not start agent: ${exit.spawnError}`;
    return { status: exit.code === 0 ? 'succeeded' : 'failed', details };
  };

  const killAllNow = (): void => {
    for (const pgid of liveGroups) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    liveGroups.clear();
  };
  return Object.assign(runAgentProcess, { killAllNow });
}
