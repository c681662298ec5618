// The dashboard's built assets (dashboard/dist, made by `npm run build:dashboard`) served at `/`.
// Files are read once into memory (the build is a few tens of KiB) and looked up by exact path, so a
// request path never reaches the file system. Client routes get index.html so deep links and reloads
// work; only the paths listed here are claimed, so `/v1/*`, `/rollout/*`, `/health`, `/metrics` and
// every other route keep their own handlers and 404s.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { type Context, Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import { GatewayError } from '../src/errors.js';

/** Paths the dashboard's router handles in the browser (dashboard/src/router.ts keeps the same list). */
export const DASHBOARD_CLIENT_ROUTES = [
  '/',
  '/rollouts',
  '/rollouts/:rid',
  '/rollouts/:rid/spans/:sid',
  '/resources',
  '/algorithm',
  '/swaps',
] as const;

const ASSETS_PREFIX = '/assets/';
const INDEX_PATH = '/index.html';
/** Vite names every file under assets/ after its content hash, so a cached copy never goes stale. */
const HASHED_CACHE_CONTROL = 'public, max-age=31536000, immutable';
/** index.html names the current hashed files, so browsers must revalidate it on every load. */
const INDEX_CACHE_CONTROL = 'no-cache';
const OTHER_CACHE_CONTROL = 'public, max-age=3600';
const MIN_GZIP_BYTES = 1024;
/** The page loads only its own bundle and talks only to this gateway (no CDN: the machine may be offline). */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt']);

interface Asset {
  readonly body: Uint8Array<ArrayBuffer>;
  readonly gzipped: Uint8Array<ArrayBuffer> | null;
  readonly contentType: string;
  readonly etag: string;
  readonly cacheControl: string;
}

export interface DashboardRoutesOptions {
  /** Folder holding the built dashboard (index.html and assets/); defaults to `<package>/dashboard/dist`. */
  readonly assetsDir?: string;
}

/** `<package root>/dashboard/dist`, found from this file both as source (routes/) and built (dist/routes/). */
export function defaultDashboardDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'dashboard')))
      return join(dir, 'dashboard', 'dist');
    const parent = dirname(dir);
    if (parent === dir) return join(dirname(fileURLToPath(import.meta.url)), '..', 'dashboard', 'dist');
    dir = parent;
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

function notBuilt(): GatewayError {
  return new GatewayError(
    'not_found',
    'The dashboard is not built: run `npm run build:dashboard` (or `npm run build`)',
  );
}

async function indexMtimeMs(dir: string): Promise<number | null> {
  try {
    return (await stat(join(dir, 'index.html'))).mtimeMs;
  } catch {
    return null;
  }
}

async function loadAssets(dir: string): Promise<ReadonlyMap<string, Asset>> {
  const assets = new Map<string, Asset>();
  for (const file of await listFiles(dir)) {
    const urlPath = `/${relative(dir, file).split(sep).join('/')}`;
    const ext = extname(file).toLowerCase();
    const body = new Uint8Array(await readFile(file));
    const isHashed = urlPath.startsWith(ASSETS_PREFIX);
    assets.set(urlPath, {
      body,
      gzipped: COMPRESSIBLE.has(ext) && body.byteLength >= MIN_GZIP_BYTES ? new Uint8Array(gzipSync(body)) : null,
      contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      cacheControl:
        urlPath === INDEX_PATH ? INDEX_CACHE_CONTROL : isHashed ? HASHED_CACHE_CONTROL : OTHER_CACHE_CONTROL,
    });
  }
  return assets;
}

function acceptsGzip(header: string | undefined): boolean {
  return header !== undefined && /\bgzip\b/i.test(header);
}

function send(c: Context<AppEnv>, asset: Asset): Response {
  const headers: Record<string, string> = {
    'content-type': asset.contentType,
    'cache-control': asset.cacheControl,
    etag: asset.etag,
    'x-content-type-options': 'nosniff',
  };
  if (asset.contentType.startsWith('text/html')) {
    headers['content-security-policy'] = CONTENT_SECURITY_POLICY;
    headers['referrer-policy'] = 'no-referrer';
    headers['x-frame-options'] = 'DENY';
  }
  if (asset.gzipped !== null) headers.vary = 'accept-encoding';
  const ifNoneMatch = c.req.header('if-none-match');
  if (ifNoneMatch?.split(',').some((tag) => tag.trim() === asset.etag)) {
    return c.body(null, 304, headers);
  }
  if (asset.gzipped !== null && acceptsGzip(c.req.header('accept-encoding'))) {
    headers['content-encoding'] = 'gzip';
    return c.body(asset.gzipped, 200, headers);
  }
  return c.body(asset.body, 200, headers);
}

export function createDashboardRoutes(options: DashboardRoutesOptions = {}): Hono<AppEnv> {
  const dir = options.assetsDir ?? defaultDashboardDir();
  let build: { readonly assets: ReadonlyMap<string, Asset>; readonly indexMtimeMs: number } | null = null;
  let loading: Promise<ReadonlyMap<string, Asset>> | null = null;
  // One stat of index.html per page load (not per asset): a rebuild while the gateway runs is picked up
  // on the next reload, and a build made after start-up is found without a restart.
  const currentAssets = async (): Promise<ReadonlyMap<string, Asset>> => {
    const mtimeMs = await indexMtimeMs(dir);
    if (mtimeMs === null) throw notBuilt();
    if (build?.indexMtimeMs === mtimeMs) return build.assets;
    loading ??= loadAssets(dir)
      .then((assets) => {
        build = { assets, indexMtimeMs: mtimeMs };
        return assets;
      })
      .finally(() => {
        loading = null;
      });
    return loading;
  };

  const app = new Hono<AppEnv>();
  const serveIndex = async (c: Context<AppEnv>): Promise<Response> => {
    const index = (await currentAssets()).get(INDEX_PATH);
    if (index === undefined) throw notBuilt();
    return send(c, index);
  };
  for (const path of DASHBOARD_CLIENT_ROUTES) app.get(path, serveIndex);
  app.get(INDEX_PATH, serveIndex);
  app.get(`${ASSETS_PREFIX}*`, async (c) => {
    const asset = build?.assets.get(c.req.path) ?? (await currentAssets()).get(c.req.path);
    if (asset === undefined) throw new GatewayError('not_found', `No dashboard asset at ${c.req.path}`);
    return send(c, asset);
  });
  return app;
}
