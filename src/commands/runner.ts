// `rollgate runner --gateway URL [--concurrency N] -- <command...>`: claims queued rollouts from a gateway's
// store API and starts the command once per attempt, configured by environment variables (OPENAI_BASE_URL,
// OPENAI_API_KEY, ROLLGATE_TASK, ROLLGATE_REWARD_URL, ...). SIGINT/SIGTERM stop claiming, let running attempts
// finish within the shutdown grace, then kill their process trees; the exit code is 0. A second signal
// skips the rest of the grace.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { pino } from 'pino';
import { createPinoLogger, type LogLevelSetting } from '../pino-logger.js';
import { createAgentTokenMinter } from '../runner/agent-tokens.js';
import { createProcessExecutor, DEFAULT_KILL_GRACE_MS } from '../runner/process-executor.js';
import { createProgressReporter } from '../runner/progress.js';
import { createRunner, DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_SHUTDOWN_GRACE_MS } from '../runner/runner.js';
import { HttpStore } from '../store/client/http.js';
import { parseGatewayUrl } from './gateway-url-option.js';

export const EXIT_STARTUP_ERROR = 1;
export const EXIT_USAGE_ERROR = 2;

interface RunnerCommandOptions {
  readonly gateway: string;
  readonly concurrency: number;
  readonly workerId?: string;
  readonly apiKey?: string;
  readonly agentKey?: string;
  readonly model?: string;
  readonly heartbeatMs: number;
  readonly killGraceMs: number;
  readonly shutdownGraceMs: number;
  readonly exitWhenIdle?: boolean;
  readonly logLevel: LogLevelSetting;
}

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError('expected a positive integer');
  return parsed;
}

function nonNegativeMs(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new InvalidArgumentError('expected milliseconds >= 0');
  return parsed;
}

export function registerRunnerCommand(program: Command): void {
  program
    .command('runner')
    .description('Run an agent command once per queued rollout attempt (any language; configured by env vars)')
    .usage('--gateway <url> [options] -- <command...>')
    .argument('<command...>', 'agent command and its arguments, after `--`')
    .addOption(
      new Option('-g, --gateway <url>', 'gateway root URL')
        .env('ROLLGATE_GATEWAY_URL')
        .argParser(parseGatewayUrl)
        .makeOptionMandatory(),
    )
    .addOption(new Option('-n, --concurrency <n>', 'attempts run at once').argParser(positiveInt).default(1))
    .addOption(
      new Option('--worker-id <id>', 'worker id prefix; slots are <id>-0, <id>-1, ... (default runner-<host>-<pid>)'),
    )
    .addOption(
      new Option(
        '--api-key <key>',
        'runner (or admin) key for the store API and for minting agent tokens; never passed to agents',
      ).env('ROLLGATE_API_KEY'),
    )
    .addOption(
      new Option(
        '--agent-key <key>',
        'key agents get as OPENAI_API_KEY (default: with --api-key a short-lived token bound to each attempt, else "rollgate"); a shared agent key reaches the model routes only, so agents cannot post rewards with it',
      ).env('ROLLGATE_AGENT_KEY'),
    )
    .addOption(
      new Option('--model <name>', 'model name agents get as ROLLGATE_MODEL (default: from the rollout resources)'),
    )
    .addOption(
      new Option('--heartbeat-ms <ms>', 'worker and attempt heartbeat period')
        .argParser(nonNegativeMs)
        .default(DEFAULT_HEARTBEAT_INTERVAL_MS),
    )
    .addOption(
      new Option('--kill-grace-ms <ms>', 'SIGTERM to SIGKILL delay when a process tree is stopped')
        .argParser(nonNegativeMs)
        .default(DEFAULT_KILL_GRACE_MS),
    )
    .addOption(
      new Option(
        '--shutdown-grace-ms <ms>',
        'on SIGINT/SIGTERM, how long running attempts may finish before they are killed',
      )
        .argParser(nonNegativeMs)
        .default(DEFAULT_SHUTDOWN_GRACE_MS),
    )
    .addOption(new Option('--exit-when-idle', 'exit once the queue is empty and no attempt runs'))
    .addOption(
      new Option('--log-level <level>', 'log level (JSON lines on stderr)')
        .choices(['debug', 'info', 'warn', 'error', 'silent'])
        .default('warn'),
    )
    .action(async (command: string[], options: RunnerCommandOptions) => {
      process.exitCode = await runRunner(command, options);
    });
}

async function runRunner(command: readonly string[], options: RunnerCommandOptions): Promise<number> {
  if (command.length === 0) {
    process.stderr.write('rollgate runner: no agent command given (put it after `--`)\n');
    return EXIT_USAGE_ERROR;
  }
  const logger = createPinoLogger({
    level: options.logLevel,
    name: 'rollgate-runner',
    destination: pino.destination({ dest: 2, sync: true }),
  });
  const store = new HttpStore({ baseUrl: options.gateway, ...(options.apiKey ? { apiKey: options.apiKey } : {}) });
  try {
    // Fail fast on a wrong URL or key instead of backing off forever against it.
    await store.statistics();
  } catch (error: unknown) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`rollgate runner: cannot use the store API at ${options.gateway}: ${message}\n`);
    await store.close();
    return EXIT_STARTUP_ERROR;
  }
  const progress = createProgressReporter({ status: process.stderr, output: process.stdout });
  const executor = createProcessExecutor({
    command,
    gatewayUrl: options.gateway,
    killGraceMs: options.killGraceMs,
    onLine: (ctx, line, stream) => progress.agentLine(ctx, line, stream),
  });
  // Agents run in their own process groups; if this process dies on an error, they must not outlive it.
  process.once('exit', executor.killAllNow);
  const runner = createRunner({
    store,
    gatewayUrl: options.gateway,
    concurrency: options.concurrency,
    ...(options.workerId !== undefined ? { workerId: options.workerId } : {}),
    // Without an explicit agent key, each agent gets a token valid for its own rollout only.
    agentKey:
      options.agentKey ??
      (options.apiKey ? createAgentTokenMinter({ gatewayUrl: options.gateway, apiKey: options.apiKey }) : null),
    model: options.model ?? null,
    heartbeatIntervalMs: options.heartbeatMs,
    shutdownGraceMs: options.shutdownGraceMs,
    exitWhenIdle: options.exitWhenIdle === true,
    logger,
    observer: progress,
    executor,
  });

  // Every timer in the runner is unref'd so library users are never held open; the command itself is a
  // foreground service, so it holds the event loop until the runner has stopped.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      process.stderr.write(
        `\nrollgate runner: ${signal}, letting running attempts finish (signal again to stop now)\n`,
      );
      void runner.close();
    } else {
      void runner.close({ graceMs: 0 });
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const stats = await runner.done;
    progress.finish(stats);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    clearInterval(keepAlive);
    process.off('exit', executor.killAllNow);
    await store.close();
  }
  return 0;
}
