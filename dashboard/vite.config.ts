// Builds the dashboard into dashboard/dist (served by routes/dashboard.ts). Everything is bundled:
// the gateway may run on a machine with no internet, so nothing is loaded from a CDN.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    // One small app: a single JS and CSS file load faster than a waterfall of chunks.
    modulePreload: { polyfill: false },
  },
});
