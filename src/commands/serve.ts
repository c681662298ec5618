// `rollgate serve`: load config (file, env, flags), build the gateway, listen, and close gracefully on
// SIGTERM/SIGINT. A bad config exits 2 with the offending key on stderr; a second signal exits at once.
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { ConfigError, type ConfigFlags, loadConfig } from '../../config/load.js';
import type { RollgateConfig } from '../../config/schema.js';
import { AlgorithmConfigError } from '../algorithms/errors.js';
import { createStoreOnlyGatewayControl } from '../algorithms/gateway-control.js';
import { validateAlgorithmConfigs } from '../algorithms/loader.js';
import { createAdminGatewayControl } from '../algorithms/rl/admin-gateway-control.js';
import { startAlgorithms } from '../algorithms/start.js';
import type { GatewayControl } from '../algorithms/types.js';
import type { Gateway } from '../app.js';

export const EXIT_CONFIG_ERROR = 2;
export const EXIT_STARTUP_ERROR = 1;

interface ServeOptions {
  readonly config?: string;
  readonly port?: string;
  readonly host?: string;
  readonly store?: string;
  readonly backend?: string;
  readonly model?: string;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Run the gateway: OpenAI-compatible proxy, store API and recorder')
    .option('-c, --config <file>', 'config file (default: ./proxy.config.json when present)')
    .option('-p, --port <port>', 'port to listen on (0 = any free port)')
    .option('--host <host>', 'address to bind')
    .option('--store <spec>', 'store: memory | sqlite:PATH | postgres://URL')
    .option('--backend <url>', 'quick start: one vLLM backend (e.g. http://127.0.0.1:8000/v1), no config file needed')
    .option('--model <name>', "model name agents use for --backend (default: agents' names pass through unchanged)")
    .action(async (options: ServeOptions) => {
      process.exitCode = await serve(options);
    });
}

/**
 * What plugins next to the gateway may use: attempt URLs, and (through the admin API with the first admin
 * key) pause/drain, pools and version bumps, plus the trainer hub behind /v1/rl/* for the `rl` plugin.
 */
function algorithmGatewayControl(gateway: Gateway, options: { gatewayUrl: string }): GatewayControl {
  const admin = createAdminGatewayControl({
    gatewayUrl: options.gatewayUrl,
    adminKey: gateway.config.auth.adminKeys[0] ?? null,
    backendApiKey: ({ model, url }) =>
      gateway.config.models.find((m) => m.name === model)?.backends.find((b) => b.url === url)?.apiKey,
  });
  return {
    ...admin,
    ...createStoreOnlyGatewayControl({ gatewayUrl: options.gatewayUrl }),
    trainerHub: gateway.rlHub,
  };
}

async function serve(options: ServeOptions): Promise<number> {
  const flags: ConfigFlags = {
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.store !== undefined ? { store: options.store } : {}),
    ...(options.backend !== undefined ? { backend: options.backend, model: options.model } : {}),
  };
  let gateway: Gateway;
  let config: RollgateConfig;
  try {
    config = loadConfig({
      ...(options.config !== undefined ? { file: options.config } : {}),
      env: process.env,
      flags,
    });
    config = loopbackWithoutKeys(config);
    await validateAlgorithmConfigs(config.algorithms);
    // Loaded after the config is known good, so `--help` and config errors answer without loading the app.
    const { createGateway } = await import('../app.js');
    gateway = await createGateway(config);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof AlgorithmConfigError) {
      process.stderr.write(`rollgate: ${error.message}\n`);
      return EXIT_CONFIG_ERROR;
    }
    process.stderr.write(`rollgate: cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_STARTUP_ERROR;
  }

  // Registered before listening, so a signal that arrives during startup still closes the store cleanly.
  let algorithms: ReturnType<typeof startAlgorithms> | null = null;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`rollgate: ${signal} again, exiting now\n`);
      process.exit(EXIT_STARTUP_ERROR);
    }
    stopping = true;
    gateway.logger.info('shutting down', { signal });
    (algorithms?.close() ?? Promise.resolve())
      .then(() => gateway.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          gateway.logger.error('shutdown failed', { err: error instanceof Error ? error.message : String(error) });
          process.exit(EXIT_STARTUP_ERROR);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let url: string;
  try {
    ({ url } = await gateway.listen());
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    await gateway.close();
    return EXIT_STARTUP_ERROR;
  }
  if (stopping) return 0;
  // Algorithm plugins run next to the gateway; one that fails is reported and never takes the gateway down.
  algorithms =
    config.algorithms.length === 0
      ? null
      : startAlgorithms(config.algorithms, {
          store: gateway.store,
          gateway: algorithmGatewayControl(gateway, { gatewayUrl: url }),
          logger: gateway.logger,
          baseDir: options.config === undefined ? process.cwd() : dirname(resolve(options.config)),
        });
  return 0;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

/** Without any key every caller is admin, so such a gateway is only ever reachable from this machine. */
function loopbackWithoutKeys(config: RollgateConfig): RollgateConfig {
  const { adminKeys, runnerKeys, agentKeys } = config.auth;
  if (adminKeys.length + runnerKeys.length + agentKeys.length > 0) return config;
  if (!LOOPBACK_HOSTS.has(config.server.host)) {
    process.stderr.write(
      `rollgate: no API keys configured (auth.adminKeys / auth.runnerKeys / auth.agentKeys): binding 127.0.0.1 instead of ${config.server.host}\n`,
    );
    return { ...config, server: { ...config.server, host: '127.0.0.1' } };
  }
  process.stderr.write('rollgate: no API keys configured: every caller is admin; listening on loopback only\n');
  return config;
}
