// routes/dashboard.ts: built assets at `/`, SPA fallback for client routes, content types, cache
// headers, and nothing claimed outside its own paths.
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchRoute } from '../../../dashboard/src/router.js';
import type { AppEnv } from '../../../middleware/env.js';
import { notFound, onError } from '../../../middleware/openai-errors.js';
import { createDashboardRoutes, DASHBOARD_CLIENT_ROUTES } from '../../../routes/dashboard.js';

const INDEX =
  '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="app"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

let dir: string;

function appFor(assetsDir: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(onError);
  app.notFound(notFound);
  app.get('/v1/agl/health', (c) => c.json({ status: 'ok' }));
  app.route('/', createDashboardRoutes({ assetsDir }));
  return app;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rollgate-dashboard-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), INDEX);
  await writeFile(join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  await writeFile(join(dir, 'assets', 'index-def456.css'), 'body{margin:0}');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('dashboard routes', () => {
  it('serves index.html at / and at every client route, never cached without revalidation', async () => {
    const app = appFor(dir);
    const paths = [
      '/',
      '/rollouts',
      '/rollouts/ro-1',
      '/rollouts/ro-1/spans/abcdef0123456789',
      '/resources',
      '/algorithm',
      '/swaps',
    ];
    expect(paths).toHaveLength(DASHBOARD_CLIENT_ROUTES.length);
    for (const path of paths) {
      const res = await app.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await res.text()).toBe(INDEX);
    }
  });

  it('claims exactly the paths the browser router handles', () => {
    const sample = (pattern: string): string => pattern.replace(':rid', 'ro-1').replace(':sid', '0123456789abcdef');
    for (const pattern of DASHBOARD_CLIENT_ROUTES)
      expect(matchRoute(sample(pattern), '').name, pattern).not.toBe('not-found');
    for (const path of ['/rollouts/ro-1/spans', '/rollout/ro-1', '/v1/agl/rollouts', '/metrics']) {
      expect(matchRoute(path, '').name, path).toBe('not-found');
    }
  });

  it('serves hashed assets with their content type and a long immutable cache', async () => {
    const app = appFor(dir);
    const js = await app.request('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await js.text()).toBe(SCRIPT);
    const css = await app.request('/assets/index-def456.css');
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toBe('body{margin:0}');
  });

  it('answers a matching If-None-Match with 304 and gzips for clients that accept it', async () => {
    const app = appFor(dir);
    const first = await app.request('/assets/index-abc123.js');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);
    const again = await app.request('/assets/index-abc123.js', { headers: { 'if-none-match': etag ?? '' } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const gz = await app.request('/assets/index-abc123.js', { headers: { 'accept-encoding': 'gzip, br' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.headers.get('vary')).toBe('accept-encoding');
    const bytes = new Uint8Array(await gz.arrayBuffer());
    expect(bytes.byteLength).toBeLessThan(SCRIPT.length);
    expect(gunzipSync(bytes).toString('utf8')).toBe(SCRIPT);
  });

  it('leaves API paths and unknown paths to their own handlers (OpenAI-shaped 404)', async () => {
    const app = appFor(dir);
    expect(await (await app.request('/v1/agl/health')).json()).toEqual({ status: 'ok' });
    for (const path of [
      '/v1/models',
      '/rollout/ro-1/attempt/at-1/v1/chat/completions',
      '/metrics',
      '/assets/nope.js',
      '/rollouts/a/b',
    ]) {
      const res = await app.request(path);
      expect(res.status, path).toBe(404);
      const body = (await res.json()) as { error: { type: string } };
      expect(body.error.type).toBe('invalid_request_error');
    }
    const post = await app.request('/', { method: 'POST', body: '{}' });
    expect(post.status).toBe(404);
  });

  it('never reads outside the build folder', async () => {
    const app = appFor(dir);
    for (const path of [
      '/assets/../index.html',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/..%2f..%2fpackage.json',
    ]) {
      const res = await app.request(path);
      if (res.status === 200) expect(await res.text()).toBe(INDEX);
      else expect(res.status, path).toBe(404);
    }
  });

  it('picks up a rebuild on the next page load without a restart', async () => {
    const build = await mkdtemp(join(tmpdir(), 'rollgate-dashboard-rebuild-'));
    try {
      await mkdir(join(build, 'assets'));
      await writeFile(join(build, 'index.html'), INDEX);
      await writeFile(join(build, 'assets', 'index-abc123.js'), SCRIPT);
      const app = appFor(build);
      expect(await (await app.request('/')).text()).toBe(INDEX);
      const rebuilt = INDEX.replace('index-abc123.js', 'index-new999.js');
      await writeFile(join(build, 'assets', 'index-new999.js'), 'console.log(2);');
      await writeFile(join(build, 'index.html'), rebuilt);
      // A distinct mtime even on file systems with coarse timestamps.
      const later = new Date(Date.now() + 5_000);
      await utimes(join(build, 'index.html'), later, later);
      expect(await (await app.request('/algorithm')).text()).toBe(rebuilt);
      expect(await (await app.request('/assets/index-new999.js')).text()).toBe('console.log(2);');
    } finally {
      await rm(build, { recursive: true, force: true });
    }
  });

  it('answers 404 naming the build command when the dashboard is not built, and recovers once it is', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'rollgate-dashboard-empty-'));
    try {
      const app = appFor(empty);
      const res = await app.request('/');
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain('npm run build:dashboard');
      await writeFile(join(empty, 'index.html'), INDEX);
      const later = await app.request('/rollouts');
      expect(later.status).toBe(200);
      expect(await later.text()).toBe(INDEX);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
