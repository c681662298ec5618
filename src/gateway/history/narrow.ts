// Narrowing of outside JSON (request bodies, engine answers) where faithful history reads it.

export type Obj = Record<string, unknown>;

export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An int[]; anything else is absent. */
export function intArray(value: unknown): number[] | null {
  if (!Array.isArray(value)) return null;
  for (const item of value) if (!Number.isInteger(item)) return null;
  return value as number[];
}
