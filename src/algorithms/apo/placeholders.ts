// f-string placeholders (`{name}`; `{{` and `}}` are literal braces). An edit must keep exactly the seed's
// placeholders: a dropped or renamed one would fail only at rollout time (docs/failure-classes.md#59).

const PLACEHOLDER = /\{\{|\}\}|\{([^{}]*)\}/g;

export function extractPlaceholders(template: string): Set<string> {
  const names = new Set<string>();
  for (const match of template.matchAll(PLACEHOLDER)) {
    const inner = match[1];
    if (inner === undefined) continue;
    // `{name!r:>10}` formats `name`.
    const name = inner.split(/[!:]/, 1)[0]?.trim() ?? '';
    names.add(name);
  }
  return names;
}

export interface PlaceholderCheck {
  readonly ok: boolean;
  readonly missing: string[];
  readonly unexpected: string[];
}

export function checkPlaceholders(original: string, edited: string): PlaceholderCheck {
  const want = extractPlaceholders(original);
  const got = extractPlaceholders(edited);
  const missing = [...want].filter((n) => !got.has(n));
  const unexpected = [...got].filter((n) => !want.has(n));
  return { ok: missing.length === 0 && unexpected.length === 0, missing, unexpected };
}

/** Formats an f-string template the way Python's `str.format(**values)` does for plain names. */
export function formatTemplate(template: string, values: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (whole, inner: string | undefined) => {
    if (whole === '{{') return '{';
    if (whole === '}}') return '}';
    const name = (inner ?? '').split(/[!:]/, 1)[0]?.trim() ?? '';
    if (!(name in values)) throw new RangeError(`template placeholder {${name}} has no value`);
    const value = values[name];
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}
