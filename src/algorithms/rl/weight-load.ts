// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${field}` is the weight-load hook's placeholder syntax, not a template literal
// How new weights reach one backend: the pool's weight-load hook (an HTTP call such as vLLM's
// /v1/load_lora_adapter, or a command), with `${field}` placeholders filled from the trainer's post.
import { execFile } from 'node:child_process';
import type { WeightLoadHook } from './options.js';
import type { WeightsUpdate } from './weights-update.js';

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
  const api = options.backend.replace(/\/+$/, '');
  const url = `${hook.base === 'server' ? api.replace(/\/v1$/, '') : api}${hook.path}`;
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

/** Runs the hook for one backend; rejects with the backend's answer when it fails. */
export function loadWeights(
  hook: WeightLoadHook,
  options: {
    readonly update: WeightsUpdate;
    readonly model: string;
    readonly backend: string;
    readonly fetch: typeof fetch;
  },
): Promise<void> {
  const fields = hookFields(options.update, { model: options.model, backend: options.backend });
  return hook.type === 'http'
    ? loadOverHttp(hook, fields, { backend: options.backend, fetch: options.fetch })
    : loadWithCommand(hook, fields);
}
