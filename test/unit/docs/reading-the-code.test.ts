// docs/reading-the-code.md walks one call from the route to the stored span by file names: every file or folder it
// names must exist, so the walk cannot drift from the code without this failing.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const DOC = 'docs/reading-the-code.md';

/** Backticked repository paths (`src/...`, `routes/...`) and bare file names (`call-run.ts`). */
function named(text: string): { paths: string[]; bare: string[] } {
  const paths: string[] = [];
  const bare: string[] = [];
  const pattern = /`([A-Za-z0-9_./-]+\.(?:ts|md)|(?:src|routes|middleware|exporters|config)\/[A-Za-z0-9_./-]*)`/g;
  for (const match of text.matchAll(pattern)) {
    const name = match[1] ?? '';
    if (name.includes('/')) paths.push(name);
    else if (name.endsWith('.ts')) bare.push(name);
  }
  return { paths, bare };
}

it('names only files and folders that exist', () => {
  const text = readFileSync(resolve(ROOT, DOC), 'utf8');
  const { paths, bare } = named(text);
  expect(paths.length).toBeGreaterThan(40);
  expect(paths.filter((path) => !existsSync(resolve(ROOT, path)))).toEqual([]);
  // A bare file name is one beside a file the walk names in full (the steps of src/gateway/engine/, say).
  const folders = new Set(
    paths.filter((path) => path.endsWith('.ts')).map((path) => path.slice(0, path.lastIndexOf('/') + 1)),
  );
  for (const path of paths) if (path.endsWith('/')) folders.add(path);
  const unknown = bare.filter((name) => ![...folders].some((folder) => existsSync(resolve(ROOT, folder, name))));
  expect(unknown).toEqual([]);
});

it('follows the call to its stored span through the recording files', () => {
  const text = readFileSync(resolve(ROOT, DOC), 'utf8');
  for (const file of [
    'src/gateway/engine/forward-engine.ts',
    'src/gateway/engine/record-call.ts',
    'src/gateway/recording/call-record.ts',
    'src/gateway/recording/stored-span.ts',
    'src/gateway/recording/store-writer.ts',
  ]) {
    expect(text).toContain(file);
  }
});
