// Portkey's AI gateway (@portkey-ai/gateway, Hono on node), the TypeScript LLM gateway bench:proxy measures rollgate
// against: issue 18 asks rollgate to stay at least 5x cheaper per call. It is installed from its own lock file
// (bench/peers/portkey/package-lock.json, every transitive version pinned) into bench/peers/portkey/node_modules on
// the first run, never into the project's own dependencies. Portkey forwards to an OpenAI-compatible server named
// per request (`x-portkey-provider: openai` + `x-portkey-custom-host`), so it proxies the same vLLM stand-in as the
// floor and the gateway. It records nothing: its cost is what a pass-through Portkey adds.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const PEER_DIR = new URL('./peers/portkey/', import.meta.url).pathname;
const SERVER_SCRIPT = join(PEER_DIR, 'node_modules/@portkey-ai/gateway/build/start-server.js');
const INSTALL_TIMEOUT_MS = 180_000;

export interface PortkeyPeer {
  /** Its name in the tables, with the pinned version. */
  readonly name: string;
  /** The node script that serves it, and its arguments for `port`. */
  readonly script: string;
  readonly args: (port: number) => string[];
  /** What each call carries so Portkey forwards it to `upstreamV1` (an origin + `/v1`). */
  readonly headers: (upstreamV1: string) => Record<string, string>;
}

function pinnedVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PEER_DIR, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  return manifest.dependencies['@portkey-ai/gateway'] ?? 'unknown';
}

/** Installs Portkey from its lock file when it is not there yet; the reason when it cannot be (offline, no npm). */
export function portkeyPeer(): PortkeyPeer | { reason: string } {
  if (!existsSync(SERVER_SCRIPT)) {
    // --ignore-scripts: nothing of the peer runs at install time; its server is a prebuilt bundle.
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const installed = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: PEER_DIR,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: INSTALL_TIMEOUT_MS,
    });
    if (installed.status !== 0 || !existsSync(SERVER_SCRIPT)) {
      const why = installed.error?.message ?? installed.stderr?.toString().trim().split('\n').slice(-1)[0] ?? '';
      return { reason: `npm ci in bench/peers/portkey failed${why === '' ? '' : `: ${why}`}` };
    }
  }
  return {
    name: `Portkey ${pinnedVersion()}`,
    script: SERVER_SCRIPT,
    // --headless: no UI, no request log streamed to it.
    args: (port) => [`--port=${port}`, '--headless'],
    headers: (upstreamV1) => ({
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': upstreamV1,
      authorization: 'Bearer bench',
    }),
  };
}
