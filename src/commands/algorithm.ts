// `rollgate algorithm --gateway URL --config F`: runs the `algorithms` of a config file in this process
// against a running gateway, through its store API (the same plugins `rollgate serve` runs in process).
// Ctrl-C aborts the running algorithm cleanly (its rollouts are cancelled, its report is written); a second
// Ctrl-C exits at once. Exit code: 0 when every algorithm succeeded, 1 when one failed, 130 when aborted,
// 2 for a bad config.
import { dirname, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { ConfigError, loadConfig } from '../../config/load.js';
import { AlgorithmConfigError } from '../algorithms/errors.js';
import { createStoreOnlyGatewayControl } from '../algorithms/gateway-control.js';
import { validateAlgorithmConfigs } from '../algorithms/loader.js';
import { startAlgorithms } from '../algorithms/start.js';
import { createPinoLogger, type LogLevelSetting } from '../pino-logger.js';
import { HttpStore } from '../store/client/http.js';
import { parseGatewayUrl } from './gateway-url-option.js';

export const EXIT_ALGORITHM_FAILED = 1;
export const EXIT_CONFIG_ERROR = 2;
export const EXIT_ABORTED = 130;

interface AlgorithmCommandOptions {
  readonly gateway: string;
  readonly config: string;
  readonly apiKey?: string;
  readonly reportDir?: string;
  readonly logLevel: LogLevelSetting;
}

export function registerAlgorithmCommand(program: Command): void {
  program
    .command('algorithm')
    .description("Run the config's algorithms (apo, evaluate, rl, or your module) against a running gateway")
    .requiredOption('-g, --gateway <url>', 'gateway root, e.g. http://127.0.0.1:8080', parseGatewayUrl)
    .requiredOption('-c, --config <file>', 'config file whose "algorithms" to run')
    .option('--api-key <key>', 'runner (or admin) key for the gateway store API (default: ROLLGATE_API_KEY)')
    .option('--report-dir <dir>', 'where reports go (default: <config folder>/data/reports)')
    .addOption(
      new Option('--log-level <level>', 'log level')
        .choices(['debug', 'info', 'warn', 'error', 'silent'])
        .default('info'),
    )
    .action(async (options: AlgorithmCommandOptions) => {
      process.exitCode = await runAlgorithmCommand(options);
    });
}

async function runAlgorithmCommand(options: AlgorithmCommandOptions): Promise<number> {
  const configPath = resolve(options.config);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({ file: configPath, env: process.env });
    if (config.algorithms.length === 0) {
      process.stderr.write(`rollgate: ${options.config} lists no algorithms\n`);
      return EXIT_CONFIG_ERROR;
    }
    await validateAlgorithmConfigs(config.algorithms);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof AlgorithmConfigError) {
      process.stderr.write(`rollgate: ${error.message}\n`);
      return EXIT_CONFIG_ERROR;
    }
    throw error;
  }

  const logger = createPinoLogger({ level: options.logLevel });
  const apiKey = options.apiKey ?? process.env.ROLLGATE_API_KEY;
  const store = new HttpStore({ baseUrl: options.gateway, ...(apiKey ? { apiKey } : {}) });
  const handle = startAlgorithms(config.algorithms, {
    store,
    gateway: createStoreOnlyGatewayControl({ gatewayUrl: options.gateway }),
    logger,
    baseDir: dirname(configPath),
    ...(options.reportDir === undefined ? {} : { reportDir: resolve(options.reportDir) }),
  });

  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      process.stderr.write(`rollgate: ${signal} again, exiting now\n`);
      process.exit(EXIT_ABORTED);
    }
    interrupted = true;
    process.stderr.write('rollgate: stopping the algorithm (cancelling its rollouts)...\n');
    void handle.close();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const outcomes = await handle.done;
    for (const outcome of outcomes) {
      const where = outcome.reportPath === null ? '' : ` (report: ${outcome.reportPath})`;
      const why = outcome.error === null ? '' : `: ${outcome.error}`;
      process.stderr.write(`rollgate: ${outcome.name} ${outcome.status}${why}${where}\n`);
    }
    if (interrupted || outcomes.some((o) => o.status === 'aborted')) return EXIT_ABORTED;
    return outcomes.every((o) => o.status === 'succeeded') ? 0 : EXIT_ALGORITHM_FAILED;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await handle.close();
    await store.close();
  }
}
