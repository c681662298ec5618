// The weight-sync cycle after a trainer posts new weights: pause -> drain -> load the weights on every
// backend of the pool (HTTP hook such as vLLM's /v1/load_lora_adapter, or a command) -> bump the pool's
// model version in one step -> resume. Resume runs in `finally`: a failed load must never leave the
// gateway paused (pitfalls.md 47). A failed load keeps the old version, so spans never claim weights the
// backends do not serve.
import { execFile } from 'node:child_process';
import type { Logger } from '../../logger.js';
import type { GatewayControl } from '../types.js';
import type { WeightLoadHook } from './options.js';
import type { WeightsUpdate } from './trainer-hub.js';

export interface WeightSyncOptions {
  readonly control: GatewayControl;
  readonly model: string;
  readonly hook: WeightLoadHook;
  readonly logger: Logger;
  readonly fetch?: typeof fetch;
}

type Fields = Readonly<Record<string, string | number | boolean>>;

const PLACEHOLDER = /\$\{([A-Za-z0-9_]+)\}/g;

function substitute(text: string, fields: Fields): string | number | boolean {
  // A string that is exactly one placeholder keeps the field's type (version stays a number).
  const whole = /^\$\{([A-Za-z0-9_]+)\}$/.exec(text);
  if (whole?.[1] !== undefined && whole[1] in fields) return fields[whole[1]] as string | number | boolean;
  return text.replace(PLACEHOLDER, (match, name: string) => (name in fields ? String(fields[name]) : match));
}

function fill(value: unknown, fields: Fields): unknown {
  if (typeof value === 'string') return substitute(value, fields);
  if (Array.isArray(value)) return value.map((v) => fill(v, fields));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, fields)]));
  }
  return value;
}

/** Fields available to a hook: the trainer's post plus version, model and backend. */
export function hookFields(update: WeightsUpdate, options: { model: string; backend: string }): Fields {
  return {
    lora_name: options.model,
    ...update.fields,
    version: update.version,
    model: options.model,
    backend: options.backend,
  };
}

async function loadOverHttp(
  hook: Extract<WeightLoadHook, { type: 'http' }>,
  fields: Fields,
  options: { backend: string; fetch: typeof fetch },
): Promise<void> {
  const url = `${options.backend.replace(/\/+$/, '')}${hook.path}`;
  const response = await options.fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...hook.headers },
    body: JSON.stringify(fill(hook.body, fields)),
    signal: AbortSignal.timeout(hook.timeoutMs),
  });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`weight load on ${options.backend} failed: HTTP ${response.status} ${text.slice(0, 300)}`);
}

function loadWithCommand(hook: Extract<WeightLoadHook, { type: 'command' }>, fields: Fields): Promise<void> {
  const [file, ...args] = hook.command.map((part) => String(substitute(part, fields)));
  return new Promise<void>((resolve, reject) => {
    execFile(file ?? '', args, { timeout: hook.timeoutMs }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`weight load command failed: ${error.message} ${String(stderr).slice(0, 300)}`));
      else resolve();
    });
  });
}

export async function syncWeights(options: WeightSyncOptions, update: WeightsUpdate): Promise<{ sync_ms: number }> {
  const { control, model, hook, logger } = options;
  if (!control.pause || !control.resume || !control.modelPools || !control.setModelVersion) {
    throw new Error('the gateway control offers no pause/resume/model pools: weights cannot be synced');
  }
  const started = performance.now();
  try {
    await control.pause({ reason: `loading weights version ${update.version}` });
    const pool = (await control.modelPools()).find((p) => p.name === model);
    if (pool === undefined) throw new Error(`model pool ${model} not found`);
    await Promise.all(
      pool.backends.map((backend) => {
        const fields = hookFields(update, { model, backend });
        return hook.type === 'http'
          ? loadOverHttp(hook, fields, { backend, fetch: options.fetch ?? fetch })
          : loadWithCommand(hook, fields);
      }),
    );
    await control.setModelVersion(model, update.version);
  } finally {
    await control.resume();
  }
  const syncMs = performance.now() - started;
  logger.info('weights loaded', { model, version: update.version, syncMs: Math.round(syncMs) });
  return { sync_ms: syncMs };
}
