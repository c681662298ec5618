// Python's `json.dumps(value, ensure_ascii=False)`: the serialiser vLLM's tool parsers use for non-stream tool-call
// arguments (`", "` and `": "` separators, non-ASCII kept). JSON.stringify writes no spaces, so an agent would see
// other arguments through the gateway than from the engine.
import { isObj } from './narrow.js';

export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (isObj(value)) {
    const members: string[] = [];
    for (const [key, member] of Object.entries(value)) {
      if (member !== undefined) members.push(`${JSON.stringify(key)}: ${pythonJson(member)}`);
    }
    return `{${members.join(', ')}}`;
  }
  return JSON.stringify(String(value));
}
