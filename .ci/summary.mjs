// Prints `N passed, N failed` from vitest's JSON report (the only line CI reads).
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-results.json';
const report = JSON.parse(readFileSync(file, 'utf8'));
const failed = report.numFailedTests + (report.numFailedTestSuites ?? 0);
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${report.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
