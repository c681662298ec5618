// Field-by-field comparison of two wire answers (the engine twin's and real vLLM's): which paths exist in one and
// not the other, and where the JSON types differ. Values that differ by nature (ids, timestamps, logprobs of random
// weights) are compared by the tests' own invariants, not here.

export type Difference =
  | { readonly path: string; readonly kind: 'only-vllm' | 'only-twin' }
  | { readonly path: string; readonly kind: 'type'; readonly vllm: string; readonly twin: string };

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Paths whose objects are maps keyed by data, not records with fixed fields. */
const MAP_PATHS = [/\.logprobs\.top_logprobs\[\]$/];

/**
 * Every difference of shape between `vllm` and `twin`. Arrays are compared element by element up to the shorter
 * length (their lengths are the tests' business); `[]` in a path stands for every index, so a difference shows
 * once however many elements share it.
 */
export function shapeDifferences(vllm: unknown, twin: unknown, path = ''): Difference[] {
  const out = new Map<string, Difference>();
  const walk = (a: unknown, b: unknown, at: string) => {
    const ta = typeName(a);
    const tb = typeName(b);
    if (ta !== tb) {
      out.set(at, { path: at, kind: 'type', vllm: ta, twin: tb });
      return;
    }
    if (ta === 'array') {
      const xs = a as unknown[];
      const ys = b as unknown[];
      for (let i = 0; i < Math.min(xs.length, ys.length); i++) walk(xs[i], ys[i], `${at}[]`);
      return;
    }
    if (ta !== 'object') return;
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    if (MAP_PATHS.some((re) => re.test(at))) {
      // A map keyed by data (completions' top_logprobs: token text -> logprob): its values are compared, not its keys.
      const [vx, vy] = [Object.values(x)[0], Object.values(y)[0]];
      if (vx !== undefined && vy !== undefined) walk(vx, vy, `${at}{}`);
      return;
    }
    for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const child = at === '' ? key : `${at}.${key}`;
      if (!(key in y)) out.set(child, { path: child, kind: 'only-vllm' });
      else if (!(key in x)) out.set(child, { path: child, kind: 'only-twin' });
      else walk(x[key], y[key], child);
    }
  };
  walk(vllm, twin, path);
  return [...out.values()].sort((p, q) => p.path.localeCompare(q.path));
}

/** One line per difference, for expectations and the fidelity table. */
export function describeDifferences(differences: readonly Difference[]): string[] {
  return differences.map((d) =>
    d.kind === 'type' ? `${d.path}: vllm ${d.vllm}, twin ${d.twin}` : `${d.path}: ${d.kind}`,
  );
}
