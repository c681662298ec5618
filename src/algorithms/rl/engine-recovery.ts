// What the `rl` plugin does with its pool's engines when it starts: a weight swap of an earlier gateway process
// that died between prepare and commit (or mid-commit) left them paused or asleep, and nothing else would ever
// resume them; every call routed there would hang. The plugin asks each backend and resumes (or wakes) it on
// whatever weights it holds; the trainer's commit for the forgotten prepare then gets a 409 and prepares again.
import type { Logger } from '../../logger.js';
import type { ModelPoolInfo } from '../types.js';
import { recoverEngine } from './engine-control.js';

const RECOVERY_TIMEOUT_MS = 10_000;

export async function recoverPoolEngines(options: {
  readonly pool: ModelPoolInfo;
  readonly logger: Logger;
  readonly fetch?: typeof fetch;
  /** Sent with every call (the weight-load hook's headers, e.g. the backends' authorization). */
  readonly headers?: Readonly<Record<string, string>>;
}): Promise<void> {
  const { pool, logger } = options;
  await Promise.all(
    pool.backends.map(async (backend) => {
      try {
        const done = await recoverEngine(backend, {
          fetch: options.fetch ?? fetch,
          headers: options.headers ?? {},
          timeoutMs: RECOVERY_TIMEOUT_MS,
          kind: pool.backendKinds?.[backend] ?? 'vllm',
        });
        if (done.woken || done.resumed) {
          logger.warn('backend was left paused or asleep by an unfinished weight swap: resumed on its weights', {
            model: pool.name,
            backend,
            woken: done.woken,
            resumed: done.resumed,
          });
        }
      } catch (error) {
        // A backend that is down now is the health checks' business; the plugin starts anyway.
        logger.warn('could not check whether a backend was left paused by an unfinished weight swap', {
          model: pool.name,
          backend,
          err: error instanceof Error ? error.message : String(error),
        });
      }
    }),
  );
}
