// Prints `N passed, N failed` from vitest's JSON reports (the only line CI reads): README's suite and the
// real-engine suite, summed. A report that is missing counts as one failure (its suite did not run to the end).
import { existsSync, readFileSync } from 'node:fs';

const files = process.argv.length > 2 ? process.argv.slice(2) : ['.vitest-results.json'];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of files) {
  if (!existsSync(file)) {
    console.error(`${file}: no report (the suite did not finish)`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests + (report.numFailedTestSuites ?? 0);
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
