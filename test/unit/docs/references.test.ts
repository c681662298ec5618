// Every reference a reader can follow resolves inside this repository: relative links (and their anchors) in
// README.md and docs/, every `.md` file a code comment names, and the generated configuration reference, which
// must match the zod schema it is generated from.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_DOC_FILE, withReference } from '../../../config/config-reference.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CODE_DIRS = ['src', 'routes', 'middleware', 'config', 'test', 'bench', 'dashboard/src', 'exporters'];
const SKIP_DIRS = new Set(['node_modules', 'dist', 'data']);

function walk(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (SKIP_DIRS.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path, keep));
    else if (keep(name)) out.push(path);
  }
  return out;
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_[\]()]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of markdown.matchAll(/^#{1,6}\s+(.+)$/gm)) anchors.add(slug(match[1] ?? ''));
  for (const match of markdown.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(match[1] ?? '');
  return anchors;
}

/** Broken relative links of one markdown file, as "file: target". */
function brokenLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const broken: string[] = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = '', anchor] = target.split('#', 2);
    const resolved = path === '' ? file : resolve(dirname(file), path);
    if (!exists(resolved)) {
      broken.push(`${relative(ROOT, file)}: ${target}`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md')) {
      if (!anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${relative(ROOT, file)}: ${target}`);
    }
  }
  return broken;
}

/** Markdown files a source file names that do not exist, looked up from the repository root or beside the file. */
function missingCitedDocs(file: string): string[] {
  // Command lines in a page's code blocks name files a command writes, not documents.
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const missing: string[] = [];
  for (const match of text.matchAll(/(?<![\w./-])((?:[\w.-]+\/)*[\w-]+\.md)\b/g)) {
    const cited = match[1] ?? '';
    if (exists(join(ROOT, cited)) || exists(join(dirname(file), cited))) continue;
    missing.push(`${relative(ROOT, file)}: ${cited}`);
  }
  return missing;
}

describe('references resolve inside the repository', () => {
  it('every relative link in README.md and docs/ points at an existing file and anchor', () => {
    const pages = [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'), (name) => name.endsWith('.md'))];
    expect(pages.length).toBeGreaterThan(5);
    expect(pages.flatMap(brokenLinks)).toEqual([]);
  });

  it('every .md file README.md and docs/ name in their text exists', () => {
    const pages = [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'), (name) => name.endsWith('.md'))];
    expect(pages.flatMap(missingCitedDocs)).toEqual([]);
  });

  it('every .md file a code comment cites exists', () => {
    const sources = CODE_DIRS.flatMap((dir) =>
      walk(join(ROOT, dir), (name) => /\.(ts|tsx|mts|mjs|cjs)$/.test(name) && !name.endsWith('.d.ts')),
    );
    expect(sources.length).toBeGreaterThan(100);
    expect(sources.flatMap(missingCitedDocs)).toEqual([]);
  });

  it('docs/configuration.md lists what the config schema accepts', () => {
    const page = readFileSync(CONFIG_DOC_FILE, 'utf8');
    expect(page, 'run `npm run config:docs`').toBe(withReference(page));
  });
});
