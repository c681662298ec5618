import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-engine suite needs real vLLM servers: `npm run test:real` (vitest.real.config.ts).
    exclude: ['test/real-engines/**', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The machine has 2 cores; more workers only add contention to socket-timing tests.
    maxWorkers: 2,
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
  },
});
