// Tool-call arguments made from a tool's JSON schema, for the agent policy (agent-policy.ts). Harnesses validate
// the arguments a model sends against the schema they offered and answer a tool error otherwise, so a policy that
// drives a harness must write valid ones. This covers the subset the harnesses' tools use (Claude Code, Codex,
// opencode, pi): objects with `required` properties, scalar types, `enum` / `const`, arrays with `items` and
// `minItems`, `anyOf` / `oneOf` / `allOf`, type lists with "null", local `$ref`s into `$defs` / `definitions`,
// and the numeric and length bounds. Only required properties are written: an optional one can always be left out,
// and leaving it out cannot break a constraint this generator does not know. The output is deterministic.
import { isRecord } from './util.js';

/** What the policy wants a value to say, by the property's role; the schema decides the shape. */
export interface ArgumentHints {
  /** The shell command, for a property named like one (`command`, `cmd`, `script`). */
  readonly command: string;
  /** Free text (a description, a prompt, a query). */
  readonly text: string;
  /** A path, for a property named like one (`path`, `file_path`, `filePath`, `dir`, `cwd`, ...). */
  readonly path: string;
}

type Schema = Record<string, unknown>;

const COMMAND_NAMES = /^(command|cmd|script|shell_command|commandline|command_line)$/i;
const PATH_NAMES = /(path|file|dir|directory|folder|cwd|workdir)$/i;
/** Deep enough for any harness tool; a schema that recurses further is cut with null. */
const MAX_DEPTH = 12;

/** Resolves a local `$ref` (`#/$defs/X`, `#/definitions/X`, `#`) against the root schema. */
function resolveRef(schema: Schema, root: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string' && hops < MAX_DEPTH; hops++) {
    const ref = current.$ref as string;
    if (!ref.startsWith('#')) return {};
    let target: unknown = root;
    for (const part of ref.slice(1).split('/').filter(Boolean)) {
      const key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
      target = isRecord(target) ? target[key] : undefined;
    }
    const { $ref: _, ...rest } = current;
    current = isRecord(target) ? { ...target, ...rest } : rest;
  }
  return current;
}

/** The first branch that is not just `null`: harness schemas put the useful shape first or alone. */
function firstBranch(branches: unknown[]): Schema {
  const useful = branches.filter(isRecord).find((b) => b.type !== 'null');
  return useful ?? (isRecord(branches[0]) ? branches[0] : {});
}

function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((t): t is string => typeof t === 'string' && t !== 'null');
  if (isRecord(schema.properties) || Array.isArray(schema.required)) return 'object';
  if (schema.items !== undefined) return 'array';
  return undefined;
}

function stringFor(schema: Schema, name: string, hints: ArgumentHints): string {
  let value = COMMAND_NAMES.test(name) ? hints.command : PATH_NAMES.test(name) ? hints.path : hints.text;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  while (value.length < min) value += '.';
  return value.length > max ? value.slice(0, max) : value;
}

function numberFor(schema: Schema, integer: boolean): number {
  // The tightest of the bounds (zod writes both `minimum` and `exclusiveMinimum` for a positive integer).
  const step = integer ? 1 : 0.5;
  const lows = [
    typeof schema.minimum === 'number' ? schema.minimum : undefined,
    typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + step : undefined,
  ].filter((v): v is number => v !== undefined);
  const highs = [
    typeof schema.maximum === 'number' ? schema.maximum : undefined,
    typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - step : undefined,
  ].filter((v): v is number => v !== undefined);
  const low = lows.length > 0 ? Math.max(...lows) : undefined;
  const high = highs.length > 0 ? Math.min(...highs) : undefined;
  const value = low ?? (high !== undefined ? Math.min(1, high) : 1);
  return integer ? Math.ceil(value) : value;
}

function valueFor(raw: unknown, name: string, root: Schema, hints: ArgumentHints, depth: number): unknown {
  if (!isRecord(raw) || depth > MAX_DEPTH) return null;
  let schema = resolveRef(raw, root);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum.find((v) => v !== null) ?? schema.enum[0];
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const { [key]: _, ...rest } = schema;
      return valueFor({ ...rest, ...firstBranch(branches) }, name, root, hints, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const { allOf, ...merged } = schema;
    for (const part of schema.allOf.filter(isRecord)) Object.assign(merged, resolveRef(part, root));
    schema = merged;
  }
  switch (typeOf(schema)) {
    case 'string':
      return stringFor(schema, name, hints);
    case 'integer':
      return numberFor(schema, true);
    case 'number':
      return numberFor(schema, false);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const items = isRecord(schema.items) ? schema.items : {};
      // A command as an argv (an older Codex `shell` tool): the shell runs the command string.
      if (COMMAND_NAMES.test(name) && typeOf(resolveRef(items, root)) === 'string') {
        return ['bash', '-lc', hints.command];
      }
      const count = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: count }, () => valueFor(items, name, root, hints, depth + 1));
    }
    case 'object':
      return objectFor(schema, root, hints, depth);
    default:
      return stringFor(schema, name, hints);
  }
}

function objectFor(schema: Schema, root: Schema, hints: ArgumentHints, depth: number): Record<string, unknown> {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === 'string')
    : [];
  const out: Record<string, unknown> = {};
  for (const key of required) out[key] = valueFor(properties[key] ?? {}, key, root, hints, depth + 1);
  return out;
}

/** Arguments for a tool whose `parameters` are `schema`: its required properties, each a valid value. */
export function argumentsFor(schema: unknown, hints: ArgumentHints): Record<string, unknown> {
  if (!isRecord(schema)) return {};
  const value = valueFor(schema, '', schema, hints, 0);
  return isRecord(value) ? value : {};
}

/** The property of a tool's schema that takes a shell command as a string, if any (`command`, `cmd`, ...). */
export function commandProperty(schema: unknown): string | undefined {
  if (!isRecord(schema)) return undefined;
  const root = resolveRef(schema, schema);
  const properties = isRecord(root.properties) ? root.properties : {};
  const required = Array.isArray(root.required) ? root.required : [];
  return Object.keys(properties).find((key) => {
    if (!COMMAND_NAMES.test(key) || !required.includes(key)) return false;
    const property = resolveRef(isRecord(properties[key]) ? properties[key] : {}, schema);
    const type = typeOf(property);
    return type === 'string' || type === 'array';
  });
}
