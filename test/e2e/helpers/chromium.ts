// Debian's Chromium driven by playwright-core (no browser download: CI installs `chromium` with apt).
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.ROLLGATE_CHROMIUM ?? '/usr/bin/chromium';

export function isChromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export interface Chromium {
  readonly context: BrowserContext;
  /** Idempotent: closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile that never talks to Google's services. */
export async function launchChromium(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<Chromium> {
  const profile = await mkdtemp(join(tmpdir(), 'rollgate-chromium-'));
  let context: BrowserContext;
  try {
    // The profile is the fresh --user-data-dir (Playwright takes it as this argument, not as a flag).
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      viewport: options.viewport ?? { width: 1440, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      timeout: 30_000,
    });
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  let closing: Promise<void> | null = null;
  return {
    context,
    close() {
      closing ??= (async () => {
        await context.close().catch(() => {});
        await rm(profile, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
