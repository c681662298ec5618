// Numbers JSON cannot carry. `JSON.parse('1e999')` is Infinity (and `-1e999` -Infinity); serialised again, for the
// store or an upstream engine, it silently becomes `null`. Every path that keeps or forwards a client's numbers
// refuses them instead (docs/input-limits.md "Numbers").

/** Whether a number inside `value` is not finite. Iterative and allocation-light: it runs on every proxied body. */
function hasNonFinite(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) return true;
      continue;
    }
    if (typeof current !== 'object' || current === null || ArrayBuffer.isView(current)) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (typeof item === 'number' ? !Number.isFinite(item) : typeof item === 'object' && item !== null) {
          pending.push(item);
        }
      }
      continue;
    }
    for (const key in current) {
      const item: unknown = (current as Record<string, unknown>)[key];
      if (typeof item === 'number' ? !Number.isFinite(item) : typeof item === 'object' && item !== null) {
        pending.push(item);
      }
    }
  }
  return false;
}

/** The path of the first non-finite number, once one is known to be there (the rare, refused case). */
function pathOf(value: unknown, path: string): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = pathOf(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const key in value) {
    const found = pathOf((value as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The path (`a.b[2]`) of the first number inside `value` that is not finite, or null. `prefix` names `value`
 * itself. The scan is iterative; naming the path recurses, over a value the depth limit has bounded already.
 */
export function nonFinitePath(value: unknown, prefix: string): string | null {
  return hasNonFinite(value) ? pathOf(value, prefix) : null;
}
