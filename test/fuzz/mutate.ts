// Deterministic request mutators for the fuzz suite: a valid request in, a broken one out, the same one for the
// same seed. Each mutation names itself so a failing case can be read (and replayed) from its label alone.
import type { Rng } from '../../src/algorithms/rng.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A request as the suite starts from it: JSON (or raw bytes for protobuf) plus where it goes. */
export interface SeedRequest {
  readonly name: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  /** Query parameters (GET routes are fuzzed through these and the path). */
  readonly query?: Readonly<Record<string, string>>;
  readonly json?: Json;
  /** Raw body (protobuf); byte-level mutations only. */
  readonly bytes?: Uint8Array;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Keys whose value is left alone: ones that legitimately make the server wait (a long poll's timeout), which a
   * mutation would turn into a legal request the per-request bound then reports as a hang.
   */
  readonly frozenKeys?: readonly string[];
}

/** A request as it goes on the wire. */
export interface WireRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array | undefined;
  /** The mutations applied, in order. */
  readonly label: string[];
}

type PathStep = string | number;

const NANISH: readonly string[] = ['NaN', 'Infinity', '-Infinity', '-0', '1e999', '0x10', ' 1', '', 'null', '1_000'];
const HUGE_NUMBERS: readonly string[] = [
  '1e308',
  '-1e308',
  '9007199254740993',
  '1e400',
  '-0',
  '1e-400',
  '123456789012345678901234567890',
];
const WRONG_TYPES: readonly string[] = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/jsonx',
  'json',
  '',
];
const PATH_JUNK: readonly string[] = [
  '%00',
  '..',
  '%2e%2e',
  'a'.repeat(300),
  '%E2%82',
  '%ZZ',
  '~!*()',
  ' ',
  '%F0%9F%92%A9',
];

/** Every path to a value inside `value` (the root included), depth first. */
function paths(value: Json, prefix: PathStep[] = [], out: PathStep[][] = []): PathStep[][] {
  out.push(prefix);
  if (Array.isArray(value)) for (const [i, item] of value.entries()) paths(item, [...prefix, i], out);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

/** Paths a mutation may touch: none through a frozen key, and none above one (replacing it would drop the key). */
function mutablePaths(value: Json, frozen: ReadonlySet<string>): PathStep[][] {
  const all = paths(value);
  const frozenPaths = all.filter((p) => p.length > 0 && frozen.has(String(p[p.length - 1])));
  return all.filter(
    (p) =>
      !p.some((s) => frozen.has(String(s))) &&
      !frozenPaths.some((f) => f.length > p.length && p.every((s, i) => f[i] === s)),
  );
}

function clone(value: Json): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

function setAt(root: Json, path: readonly PathStep[], replacement: Json | undefined): Json {
  if (path.length === 0) return replacement ?? null;
  let parent: Json = root;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string, Json>)[step as string] as Json;
  const last = path[path.length - 1] as PathStep;
  if (Array.isArray(parent)) {
    if (replacement === undefined) parent.splice(last as number, 1);
    else parent[last as number] = replacement;
  } else if (parent !== null && typeof parent === 'object') {
    if (replacement === undefined) delete parent[last as string];
    else parent[last as string] = replacement;
  }
  return root;
}

function otherType(rng: Rng, value: Json): Json {
  const options: Json[] = [0, -1, 3.5, 'x', '', true, false, null, [], {}, [1, 'a'], { a: 1 }];
  const differs = options.filter((o) => typeof o !== typeof value || Array.isArray(o) !== Array.isArray(value));
  return rng.pick(differs);
}

function nest(depth: number): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    open.push(i % 2 === 0 ? '[' : '{"n":');
    close.push(i % 2 === 0 ? ']' : '}');
  }
  return `${open.join('')}1${close.reverse().join('')}`;
}

/** A placeholder string that survives JSON.stringify and is swapped for raw JSON text (numbers JSON cannot hold). */
const RAW_MARK = '\u0000raw:';

interface JsonState {
  value: Json;
  /** Raw text edits applied after serialisation. */
  rawEdits: Array<(text: string) => string>;
  frozen: ReadonlySet<string>;
  /** Raw JSON texts the placeholders stand for (numbers JSON.stringify cannot write, nesting too deep to build). */
  raw: string[];
}

function rawValue(state: JsonState, text: string): Json {
  state.raw.push(text);
  return `${RAW_MARK}${state.raw.length - 1}`;
}

type JsonMutation = (rng: Rng, state: JsonState, mutable: PathStep[][]) => string;

const JSON_MUTATIONS: Readonly<Record<string, JsonMutation>> = {
  typeSwap(rng, state, mutable) {
    const path = rng.pick(mutable);
    const current = path.reduce<Json>((v, step) => (v as Record<string, Json>)[step as string] as Json, state.value);
    state.value = setAt(state.value, path, otherType(rng, current));
    return `typeSwap(${path.join('.')})`;
  },
  delete(rng, state, mutable) {
    const candidates = mutable.filter((p) => p.length > 0);
    if (candidates.length === 0) return 'delete(none)';
    const path = rng.pick(candidates);
    state.value = setAt(state.value, path, undefined);
    return `delete(${path.join('.')})`;
  },
  hugeNumber(rng, state, mutable) {
    const path = rng.pick(mutable);
    const text = rng.pick(HUGE_NUMBERS);
    state.value = setAt(state.value, path, rawValue(state, text));
    return `hugeNumber(${path.join('.')}=${text})`;
  },
  nanString(rng, state, mutable) {
    const path = rng.pick(mutable);
    const text = rng.pick(NANISH);
    state.value = setAt(state.value, path, text);
    return `nanString(${path.join('.')}=${JSON.stringify(text)})`;
  },
  deepNesting(rng, state, mutable) {
    const path = rng.pick(mutable);
    const depth = rng.pick([20, 127, 129, 5_000, 100_000]);
    // Built as text: a value this deep would overflow the stack of any recursive walk, this suite's included.
    state.value = setAt(state.value, path, rawValue(state, nest(depth)));
    return `deepNesting(${path.join('.')}x${depth})`;
  },
  longString(rng, state, mutable) {
    const path = rng.pick(mutable);
    const length = rng.pick([1_000, 70_000, 300_000, 1_200_000]);
    const unit = rng.pick(['a', 'é', '😀', '\u0000', '"\\', '<|im_end|>']);
    state.value = setAt(state.value, path, unit.repeat(Math.ceil(length / unit.length)));
    return `longString(${path.join('.')}x${length})`;
  },
  longArray(rng, state, mutable) {
    const path = rng.pick(mutable);
    const length = rng.pick([1_000, 50_000]);
    state.value = setAt(
      state.value,
      path,
      Array.from({ length }, (_, i) => i),
    );
    return `longArray(${path.join('.')}x${length})`;
  },
  duplicateKey(rng, state, mutable) {
    const objects = mutable.filter((p) => {
      const v = p.reduce<Json>((x, step) => (x as Record<string, Json>)[step as string] as Json, state.value);
      return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0;
    });
    if (objects.length === 0) return 'duplicateKey(none)';
    const path = rng.pick(objects);
    const obj = path.reduce<Json>((x, step) => (x as Record<string, Json>)[step as string] as Json, state.value) as {
      [key: string]: Json;
    };
    const keys = Object.keys(obj).filter((k) => !state.frozen.has(k));
    if (keys.length === 0) return 'duplicateKey(none)';
    const key = rng.pick(keys);
    const dup = JSON.stringify(otherType(rng, obj[key] ?? null));
    // Mark the object so the duplicate lands inside it: JSON.parse keeps the last of two equal keys.
    const marker = `__dup_${rng.int(1e9)}`;
    obj[marker] = 0;
    state.rawEdits.push((text) => text.replace(`"${marker}":0`, `${JSON.stringify(key)}:${dup}`));
    return `duplicateKey(${[...path, key].join('.')})`;
  },
  extraKey(rng, state, mutable) {
    const objects = mutable.filter((p) => {
      const v = p.reduce<Json>((x, step) => (x as Record<string, Json>)[step as string] as Json, state.value);
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    });
    if (objects.length === 0) return 'extraKey(none)';
    const path = rng.pick(objects);
    const key = rng.pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'x'.repeat(500), '', 'stream']);
    const obj = path.reduce<Json>((x, step) => (x as Record<string, Json>)[step as string] as Json, state.value) as {
      [key: string]: Json;
    };
    const marker = `__extra_${rng.int(1e9)}`;
    obj[marker] = 0;
    const value = JSON.stringify(otherType(rng, null));
    state.rawEdits.push((text) => text.replace(`"${marker}":0`, `${JSON.stringify(key)}:${value}`));
    return `extraKey(${[...path, key.slice(0, 20)].join('.')})`;
  },
  replaceRoot(rng, state) {
    // A body without its frozen keys could be a legal request that waits (a long poll without its timeout).
    if (state.frozen.size > 0) return 'replaceRoot(skipped)';
    state.value = rng.pick<Json>([null, 0, 'str', [], [state.value], true, {}]);
    return 'replaceRoot';
  },
};

type ByteMutation = (rng: Rng, bytes: Uint8Array) => [Uint8Array, string];

const BYTE_MUTATIONS: Readonly<Record<string, ByteMutation>> = {
  truncate(rng, bytes) {
    const at = bytes.length === 0 ? 0 : rng.int(bytes.length);
    return [bytes.slice(0, at), `truncate(${at}/${bytes.length})`];
  },
  badUtf8(rng, bytes) {
    const junk = rng.pick([[0xff], [0xfe, 0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf]]);
    const at = rng.int(bytes.length + 1);
    const out = new Uint8Array(bytes.length + junk.length);
    out.set(bytes.slice(0, at), 0);
    out.set(junk, at);
    out.set(bytes.slice(at), at + junk.length);
    return [out, `badUtf8(@${at})`];
  },
  flipBytes(rng, bytes) {
    const out = bytes.slice();
    const n = 1 + rng.int(4);
    for (let i = 0; i < n && out.length > 0; i++) out[rng.int(out.length)] = rng.int(256);
    return [out, `flipBytes(${n})`];
  },
  appendGarbage(rng, bytes) {
    const junk = rng.pick(['}', ']]]', ',', '\u0000', '{"a":1}', '\xff\xff\xff\xff\x0f', ' '.repeat(10_000)]);
    return [Buffer.concat([bytes, Buffer.from(junk, 'latin1')]), 'appendGarbage'];
  },
  empty(_rng, _bytes) {
    return [new Uint8Array(0), 'empty'];
  },
};

export interface MutateOptions {
  readonly rng: Rng;
}

/** One mutated request from a seed: 1-3 mutations, JSON-level and/or on the wire (bytes, headers, path, query). */
export function mutate(seed: SeedRequest, options: MutateOptions): WireRequest {
  const { rng } = options;
  const label: string[] = [seed.name];
  const headers: Record<string, string> = { ...seed.headers };
  let path = seed.path;
  const query = new URLSearchParams(seed.query ?? {});
  let bytes: Uint8Array | undefined;
  let contentType = seed.contentType ?? (seed.json !== undefined ? 'application/json' : undefined);

  const count = 1 + rng.int(3);
  const frozen = new Set(seed.frozenKeys ?? []);
  const state: JsonState | null =
    seed.json === undefined ? null : { value: clone(seed.json), rawEdits: [], frozen, raw: [] };
  const mutable = state === null ? [] : mutablePaths(state.value, frozen);
  const wireOps: Array<'bytes' | 'contentType' | 'path' | 'query' | 'method'> = [];
  for (let i = 0; i < count; i++) {
    const roll = rng.next();
    if (state !== null && mutable.length > 0 && roll < 0.6) {
      const name = rng.pick(Object.keys(JSON_MUTATIONS));
      const now = mutablePaths(state.value, frozen);
      if (now.length > 0) label.push((JSON_MUTATIONS[name] as JsonMutation)(rng, state, now));
    } else {
      wireOps.push(
        rng.pick(
          seed.method === 'GET' || (seed.json === undefined && seed.bytes === undefined)
            ? (['path', 'query', 'query', 'method'] as const)
            : (['bytes', 'bytes', 'contentType', 'path', 'query'] as const),
        ),
      );
    }
  }

  if (state !== null) {
    const raw = state.raw;
    let text = JSON.stringify(state.value).replace(/"\\u0000raw:(\d+)"/g, (_m, i: string) => raw[Number(i)] ?? 'null');
    for (const edit of state.rawEdits) text = edit(text);
    bytes = Buffer.from(text, 'utf8');
  } else if (seed.bytes !== undefined) {
    bytes = seed.bytes;
  }

  let method: string = seed.method;
  for (const op of wireOps) {
    switch (op) {
      case 'bytes': {
        // A changed byte inside a frozen key's name can leave valid JSON without that key (a wait with no timeout).
        const names = Object.keys(BYTE_MUTATIONS).filter(
          (n) => frozen.size === 0 || (n !== 'badUtf8' && n !== 'flipBytes'),
        );
        const name = rng.pick(names);
        const [out, what] = (BYTE_MUTATIONS[name] as ByteMutation)(rng, bytes ?? new Uint8Array(0));
        bytes = out;
        label.push(what);
        break;
      }
      case 'contentType': {
        const type = rng.pick(WRONG_TYPES);
        contentType = type === '' ? undefined : type;
        label.push(`contentType(${type || 'none'})`);
        break;
      }
      case 'path': {
        const segments = path.split('/');
        const at = 1 + rng.int(Math.max(1, segments.length - 1));
        const junk = rng.pick(PATH_JUNK);
        segments[at] = junk;
        path = segments.join('/');
        label.push(`path(${at}=${junk.slice(0, 12)})`);
        break;
      }
      case 'query': {
        const keys = [...query.keys()].filter((k) => !frozen.has(k));
        const key =
          keys.length > 0 && rng.next() < 0.7 ? rng.pick(keys) : rng.pick(['limit', 'offset', 'x', 'sort_by']);
        const value = rng.pick([...NANISH, ...HUGE_NUMBERS, 'a'.repeat(5000), '%', '[]', '-5']);
        query.set(key, value);
        label.push(`query(${key}=${value.slice(0, 12)})`);
        break;
      }
      case 'method': {
        method = rng.pick(['POST', 'PUT', 'DELETE', 'PATCH']);
        label.push(`method(${method})`);
        break;
      }
    }
  }
  if (contentType !== undefined && (bytes !== undefined || method !== 'GET')) headers['content-type'] = contentType;
  const qs = query.toString();
  return {
    method,
    path: qs === '' ? path : `${path}?${qs}`,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : bytes,
    label,
  };
}
