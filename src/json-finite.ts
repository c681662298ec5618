// Numbers JSON cannot carry. `JSON.parse('1e999')` is Infinity (and `-1e999` -Infinity); serialised again, for the
// store or an upstream engine, it silently becomes `null`. Every path that keeps or forwards a client's numbers
// refuses them instead (docs/input-limits.md "Numbers").

/**
 * The path (`a.b[2]`) of the first number inside `value` that is not finite, or null. `prefix` names `value`
 * itself. Iterative, so a deep value cannot overflow the stack (the depth limit has bounded it already).
 */
export function nonFinitePath(value: unknown, prefix: string): string | null {
  const pending: unknown[] = [value];
  const paths: string[] = [prefix];
  while (pending.length > 0) {
    const current = pending.pop();
    const path = paths.pop() as string;
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) return path;
      continue;
    }
    if (typeof current !== 'object' || current === null || ArrayBuffer.isView(current)) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (typeof item === 'number' ? !Number.isFinite(item) : typeof item === 'object' && item !== null) {
          pending.push(item);
          paths.push(`${path}[${i}]`);
        }
      }
      continue;
    }
    for (const key in current) {
      const item: unknown = (current as Record<string, unknown>)[key];
      if (typeof item === 'number' ? !Number.isFinite(item) : typeof item === 'object' && item !== null) {
        pending.push(item);
        paths.push(path === '' ? key : `${path}.${key}`);
      }
    }
  }
  return null;
}
