// The report writer replaces only an earlier report: never a device, a socket or a link (issue: a test suite run
// as root once turned /dev/null into a regular file through the temp-file-plus-rename).
import { lstatSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReportPathError, writeJsonAtomic } from '../../../src/algorithms/report.js';
import { tempFilePath } from '../../helpers/temp-path.js';

describe('writeJsonAtomic', () => {
  it('writes a new report and replaces an earlier one', async () => {
    const path = tempFilePath('report.json');
    await writeJsonAtomic(path, { round: 1 });
    await writeJsonAtomic(path, { round: 2 });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ round: 2 });
    expect(readdirSync(dirname(path))).toEqual(['report.json']);
  });

  it('refuses to rename over a socket and leaves it and no temp file behind', async () => {
    const path = tempFilePath('report.sock');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      await expect(writeJsonAtomic(path, { x: 1 })).rejects.toBeInstanceOf(ReportPathError);
      expect(lstatSync(path).isSocket()).toBe(true);
      expect(readdirSync(dirname(path))).toEqual(['report.sock']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses to replace a symbolic link, so the file it points at is untouched', async () => {
    const target = tempFilePath('target.txt');
    writeFileSync(target, 'keep');
    const link = join(dirname(target), 'report.json');
    symlinkSync(target, link);
    await expect(writeJsonAtomic(link, { x: 1 })).rejects.toBeInstanceOf(ReportPathError);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('keep');
  });
});
