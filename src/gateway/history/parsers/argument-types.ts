// Argument values written as text (the XML-like formats) get the JSON type the tool's schema gives them, as vLLM
// does for those formats: null, integer, number, boolean, object, array, string, in that order of preference, the
// first the text reads as; without a schema for the parameter, the value stays a string. Objects and arrays already
// parsed are walked with their `properties` and `items`.
import { isObj } from '../narrow.js';
import type { ToolSchema } from './output-parser.js';

function typesOf(schema: unknown): Set<string> {
  const types = new Set<string>();
  if (!isObj(schema)) return new Set(['string']);
  const type = schema.type;
  if (typeof type === 'string') types.add(type);
  else if (Array.isArray(type)) for (const t of type) if (typeof t === 'string') types.add(t);
  if (Array.isArray(schema.enum)) {
    for (const value of schema.enum) {
      if (value === null) types.add('null');
      else if (typeof value === 'boolean') types.add('boolean');
      else if (typeof value === 'number') types.add(Number.isInteger(value) ? 'integer' : 'number');
      else if (typeof value === 'string') types.add('string');
      else if (Array.isArray(value)) types.add('array');
      else if (isObj(value)) types.add('object');
    }
  }
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const choices = schema[key];
    if (Array.isArray(choices)) for (const choice of choices) for (const t of typesOf(choice)) types.add(t);
  }
  if (types.size === 0) types.add('string');
  return new Set([...types].map((t) => t.trim().toLowerCase()));
}

const INTEGER = /^\s*[+-]?\d+(_\d+)*\s*$/;
const NUMBER = /^\s*[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+)?\s*$/;

/** A text value as the schema's type would have it (the text itself when none fits). */
export function coerceText(value: string, schema: unknown): unknown {
  const types = typesOf(schema);
  for (const candidate of ['null', 'integer', 'number', 'boolean', 'object', 'array', 'string']) {
    if (!types.has(candidate)) continue;
    if (candidate === 'null') {
      if (value.toLowerCase() === 'null') return null;
    } else if (candidate === 'string') {
      return value;
    } else if (candidate === 'integer') {
      if (INTEGER.test(value)) return Number(value.replaceAll('_', '').trim());
    } else if (candidate === 'number') {
      if (NUMBER.test(value)) {
        const n = Number(value.replaceAll('_', '').trim());
        if (Number.isFinite(n)) return n;
      }
    } else if (candidate === 'boolean') {
      const lower = value.toLowerCase().trim();
      if (lower === 'true' || lower === '1') return true;
      if (lower === 'false' || lower === '0') return false;
    } else {
      try {
        const parsed: unknown = JSON.parse(value);
        if (candidate === 'object' ? isObj(parsed) : Array.isArray(parsed)) return parsed;
      } catch {
        // not JSON: the next type is tried
      }
    }
  }
  return value;
}

function coerceValue(value: unknown, schema: unknown): unknown {
  if (typeof value === 'string') return coerceText(value, schema);
  if (Array.isArray(value)) {
    const items = isObj(schema) ? schema.items : undefined;
    return isObj(items) ? value.map((item) => coerceValue(item, items)) : value;
  }
  if (isObj(value)) {
    const properties = isObj(schema) ? schema.properties : undefined;
    return isObj(properties) ? coerceMembers(value, properties) : value;
  }
  return value;
}

function coerceMembers(args: Record<string, unknown>, properties: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    const schema = properties[key];
    out[key] = isObj(schema) ? coerceValue(value, schema) : value;
  }
  return out;
}

/** The properties schema of the tool named `name`, or null. */
export function toolProperties(tools: readonly ToolSchema[] | null, name: string): Record<string, unknown> | null {
  const tool = tools?.find((t) => t.name === name);
  const parameters = tool?.parameters;
  if (!isObj(parameters) || !isObj(parameters.properties)) return null;
  return Object.keys(parameters.properties).length === 0 ? null : parameters.properties;
}

/** Argument members typed by the tool's schema (members without one are left as they are). */
export function typedArguments(
  args: Record<string, unknown>,
  tools: readonly ToolSchema[] | null,
  name: string,
): Record<string, unknown> {
  const properties = toolProperties(tools, name);
  return properties === null ? args : coerceMembers(args, properties);
}
