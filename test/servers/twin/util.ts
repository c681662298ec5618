// Small helpers shared by the twin's modules: narrowing of outside input and deterministic hashing.
import { randomUUID } from 'node:crypto';

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** FNV-1a over the UTF-16 code units of a string. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** FNV-1a over a list of integers (token ids), 4 bytes each. */
export function hashInts(ids: readonly number[], seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (const id of ids) {
    for (let k = 0; k < 4; k++) {
      h ^= (id >>> (k * 8)) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h >>> 0;
}

/** A 32-bit avalanche mix of two integers. */
export function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ b;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** 32 lowercase hex digits, like vLLM's random_uuid(). */
export function hexId(): string {
  return randomUUID().replaceAll('-', '');
}

/** Python's json.dumps(value, ensure_ascii=False): `", "` and `": "` separators, what templates' tojson writes. */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  if (isRecord(value)) {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(String(value));
}

/** Length in code points, as Python's len() counts the text_offset of completions logprobs. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
