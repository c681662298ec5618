#!/usr/bin/env node
// Runs the built CLI when `npm run build` has produced it, else the TypeScript source through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/src/cli.js', import.meta.url);
const { runCli } = existsSync(fileURLToPath(built))
  ? await import(built.href)
  : await (await import('tsx/esm/api')).tsImport('../src/cli.ts', import.meta.url);
await runCli(process.argv);
