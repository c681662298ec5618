// Paths for files a test makes, in a fresh directory of the OS temp dir: tests never write to system paths
// (a report path of /dev/null, renamed over as root, once turned the device into a regular file).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempFilePath(name: string): string {
  return join(mkdtempSync(join(tmpdir(), 'rollgate-test-')), name);
}
