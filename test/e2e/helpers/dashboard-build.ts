// Builds dashboard/dist when it is missing or older than its sources, so the e2e test never drives a
// stale bundle (CI runs `npm test` without `npm run build`).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
export const DASHBOARD_DIST = join(ROOT, 'dashboard', 'dist');
/** Everything the bundle is made of: the dashboard and the pure core modules it imports. */
const SOURCES = [
  'dashboard/src',
  'dashboard/index.html',
  'dashboard/vite.config.ts',
  'src/adapters',
  'src/contracts',
  'src/store/core/types.ts',
];

async function newestMtimeMs(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

export async function ensureDashboardBuilt(): Promise<void> {
  const index = join(DASHBOARD_DIST, 'index.html');
  if (existsSync(index)) {
    const built = (await stat(index)).mtimeMs;
    const sources = await Promise.all(SOURCES.map((s) => newestMtimeMs(join(ROOT, s))));
    if (Math.max(...sources) <= built) return;
  }
  await run(
    process.execPath,
    [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'dashboard/vite.config.ts'],
    {
      cwd: ROOT,
      timeout: 120_000,
    },
  );
}
