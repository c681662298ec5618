import { defineConfig } from 'vitest/config';

// The real-engine suite (`npm run test:real`, docs/real-engine-suite.md): tests against real vLLM servers on the
// CPU. One server per release is started for the whole run (a start takes a minute on 2 cores), so the files run
// one at a time against it.
export default defineConfig({
  test: {
    include: ['test/real-engines/**/*.test.ts'],
    globalSetup: ['test/real-engines/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    maxWorkers: 1,
    reporters: ['default', ['json', { outputFile: '.vitest-real-results.json' }]],
  },
});
