// Config from three layers, later ones winning: proxy.config.json (or built-in defaults), ROLLGATE_* environment
// variables, then CLI flags. Validated once by configSchema; a bad value fails with the key path and the reason.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { configSchema, type RollgateConfig } from './schema.js';

export const DEFAULT_CONFIG_FILE = 'proxy.config.json';
export const ENV_PREFIX = 'ROLLGATE_';

/** Flags the CLI offers on top of the file and the environment. */
export interface ConfigFlags {
  readonly port?: number | string;
  readonly host?: string;
  /** `memory`, `sqlite:PATH`, or `postgres://...` */
  readonly store?: string;
  /** Quick single vLLM pool: replaces the file's models with one pool named `model`. */
  readonly backend?: string;
  readonly model?: string;
}

export interface LoadConfigOptions {
  /** Explicit config path (`--config`); it must exist. Without it ./proxy.config.json is used when present. */
  readonly file?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly flags?: ConfigFlags;
}

export interface ConfigIssue {
  /** Dotted key path, e.g. `server.port`; empty for the document itself. */
  readonly path: string;
  readonly message: string;
}

export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];
  /** Where the bad value came from, e.g. the file path or `ROLLGATE_SERVER_PORT`. */
  readonly source: string | null;

  constructor(issues: readonly ConfigIssue[], options?: { source?: string | null; cause?: unknown }) {
    const lines = issues.map((issue) => (issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`));
    const where = options?.source ? ` (${options.source})` : '';
    super(`Invalid config${where}: ${lines.join('; ')}`, { cause: options?.cause });
    this.name = 'ConfigError';
    this.issues = issues;
    this.source = options?.source ?? null;
  }
}

type Tree = Record<string, unknown>;

export function loadConfig(options: LoadConfigOptions = {}): RollgateConfig {
  const cwd = options.cwd ?? process.cwd();
  const { document, source } = readDocument(options.file, cwd);
  const fromEnv = envOverrides(options.env ?? {});
  const fromFlags = flagOverrides(options.flags ?? {});
  const merged = deepMerge(deepMerge(document, fromEnv), fromFlags);
  const result = configSchema.safeParse(merged);
  if (!result.success) {
    const issues = toIssues(result.error);
    // Name where each bad value came from: a flag or an environment variable wins over the file, so blaming
    // proxy.config.json for a bad ROLLGATE_* value sent people looking in the wrong place.
    const origins = new Set(issues.map((issue) => originOf(issue.path, { fromEnv, fromFlags, file: source })));
    const where = [...origins].filter((origin): origin is string => origin !== null);
    throw new ConfigError(issues, { source: where.length === 0 ? null : where.join(', ') });
  }
  return result.data;
}

function hasPath(tree: Tree, path: readonly string[]): boolean {
  let node: unknown = tree;
  for (const segment of path) {
    if (!isTree(node) && !Array.isArray(node)) return false;
    const next: unknown = (node as Record<string, unknown>)[segment];
    if (next === undefined) return false;
    node = next;
  }
  return true;
}

/** The flag, environment variable or file a bad value at `dotted` came from (the longest set prefix decides). */
function originOf(dotted: string, layers: { fromEnv: Tree; fromFlags: Tree; file: string | null }): string | null {
  const path = dotted === '' ? [] : dotted.split('.');
  for (let length = path.length; length > 0; length--) {
    const prefix = path.slice(0, length);
    if (hasPath(layers.fromFlags, prefix)) return 'command-line flags';
    if (hasPath(layers.fromEnv, prefix)) {
      const names = [...configEnvKeys()].filter(([, key]) => key.path.join('.') === prefix.join('.'));
      return names[0]?.[0] ?? 'ROLLGATE_* environment variables';
    }
  }
  return layers.file;
}

/** Parses a store spec: `memory`, `sqlite:PATH` (or a bare `*.db` path), `postgres://URL`. */
export function parseStoreSpec(spec: string): Tree {
  if (spec === 'memory') return { kind: 'memory' };
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new ConfigError([{ path: 'store', message: 'sqlite: needs a file path (sqlite:PATH)' }]);
    return { kind: 'sqlite', path };
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) return { kind: 'postgres', url: spec };
  throw new ConfigError([
    { path: 'store', message: `expected memory, sqlite:PATH or postgres://URL, received ${JSON.stringify(spec)}` },
  ]);
}

function readDocument(file: string | undefined, cwd: string): { document: Tree; source: string | null } {
  const path = resolve(cwd, file ?? DEFAULT_CONFIG_FILE);
  if (file === undefined && !existsSync(path)) return { document: {}, source: null };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([{ path: '', message: `cannot read ${path}: ${(error as Error).message}` }], {
      source: path,
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([{ path: '', message: `not valid JSON: ${(error as Error).message}` }], {
      source: path,
      cause: error,
    });
  }
  if (!isTree(parsed)) throw new ConfigError([{ path: '', message: 'expected a JSON object' }], { source: path });
  return { document: parsed, source: path };
}

function flagOverrides(flags: ConfigFlags): Tree {
  const server: Tree = {};
  if (flags.port !== undefined) server.port = coerceNumber(flags.port);
  if (flags.host !== undefined) server.host = flags.host;
  const out: Tree = {};
  if (Object.keys(server).length > 0) out.server = server;
  if (flags.store !== undefined) out.store = parseStoreSpec(flags.store);
  if (flags.backend !== undefined) {
    // Without --model the backend's own model name is unknown: agents' names pass through unchanged (mapping them
    // all to "default" made the backend answer 404 to an agent that sent its real model name).
    out.models = [
      flags.model === undefined
        ? { name: 'default', upstreamModel: null, backends: [{ url: flags.backend, type: 'vllm' }] }
        : { name: flags.model, backends: [{ url: flags.backend, type: 'vllm' }] },
    ];
  }
  return out;
}

// ---- ROLLGATE_* environment variables, derived from the schema's own key paths ----

type LeafKind = 'number' | 'boolean' | 'string' | 'string-list' | 'json';

interface EnvKey {
  readonly path: readonly string[];
  readonly kind: LeafKind;
}

/** `server.bodyLimitBytes` -> `ROLLGATE_SERVER_BODY_LIMIT_BYTES`. */
export function envNameFor(path: readonly string[]): string {
  return ENV_PREFIX + path.map((segment) => segment.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

let envKeysCache: Map<string, EnvKey> | null = null;

/** Every settable leaf of the schema by its environment variable name. */
export function configEnvKeys(): ReadonlyMap<string, EnvKey> {
  if (envKeysCache === null) {
    envKeysCache = new Map();
    collectLeaves(configSchema, [], envKeysCache);
  }
  return envKeysCache;
}

interface SchemaDef {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly shape?: Record<string, z.ZodType>;
  readonly element?: z.ZodType;
}

function defOf(schema: z.ZodType): SchemaDef {
  return (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let def = defOf(current); def.innerType !== undefined; def = defOf(current)) current = def.innerType;
  return current;
}

function collectLeaves(schema: z.ZodType, path: string[], into: Map<string, EnvKey>): void {
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (def.type === 'object' && def.shape !== undefined) {
    for (const [key, child] of Object.entries(def.shape)) {
      if (key.startsWith('$')) continue;
      collectLeaves(child, [...path, key], into);
    }
    return;
  }
  const kind: LeafKind =
    def.type === 'number' || def.type === 'int'
      ? 'number'
      : def.type === 'boolean'
        ? 'boolean'
        : def.type === 'string' || def.type === 'enum' || def.type === 'literal'
          ? 'string'
          : def.type === 'array' && def.element !== undefined && defOf(unwrap(def.element)).type === 'string'
            ? 'string-list'
            : 'json';
  into.set(envNameFor(path), { path, kind });
}

function envOverrides(env: Readonly<Record<string, string | undefined>>): Tree {
  const keys = configEnvKeys();
  let out: Tree = {};
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || !name.startsWith(ENV_PREFIX)) continue;
    const key = keys.get(name);
    if (key === undefined) continue;
    out = deepMerge(out, nest(key.path, coerceEnv(name, raw, key.kind)));
  }
  return out;
}

function coerceEnv(name: string, raw: string, kind: LeafKind): unknown {
  switch (kind) {
    case 'number':
      return coerceNumber(raw);
    case 'boolean':
      return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
    case 'string':
      return raw;
    case 'string-list':
      // `a,b` is the convenient spelling; a JSON array is accepted too.
      if (raw.trim().startsWith('[')) return coerceEnv(name, raw, 'json');
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    case 'json':
      try {
        return JSON.parse(raw) as unknown;
      } catch (error) {
        throw new ConfigError([{ path: '', message: `${name} must be JSON: ${(error as Error).message}` }], {
          source: name,
        });
      }
  }
}

/** Leaves non-numeric text as a string so validation names the key and says a number was expected. */
function coerceNumber(raw: number | string): number | string {
  if (typeof raw === 'number') return raw;
  const trimmed = raw.trim();
  const value = Number(trimmed);
  return trimmed !== '' && Number.isFinite(value) ? value : raw;
}

function nest(path: readonly string[], value: unknown): Tree {
  let out: unknown = value;
  for (const segment of path.toReversed()) out = { [segment]: out };
  return out as Tree;
}

function isTree(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Objects merge key by key; arrays and scalars are replaced. */
export function deepMerge(base: Tree, override: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const previous = out[key];
    out[key] = isTree(previous) && isTree(value) ? deepMerge(previous, value) : value;
  }
  return out;
}

function toIssues(error: z.ZodError): ConfigIssue[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return { path: path.join('.'), message: `unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` };
    }
    return { path: path.join('.'), message: issue.message.replace(/^Invalid input: /, '') };
  });
}
