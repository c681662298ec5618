// The default connection limit leaves each client connection room for an upstream one, plus a reserve for the
// store, logs and exporters, so a flood of clients cannot take the descriptors the gateway itself needs.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultMaxConnections, descriptorLimit, serverOptions } from '../../../src/connection-guards.js';

const dir = mkdtempSync(join(tmpdir(), 'rollgate-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('connection limits', () => {
  it('reads the soft descriptor limit from a Linux limits file', () => {
    const file = join(dir, 'limits');
    writeFileSync(
      file,
      'Limit                     Soft Limit           Hard Limit           Units\n' +
        'Max open files            256                  4096                 files\n',
    );
    expect(descriptorLimit(file)).toBe(256);
    expect(descriptorLimit(join(dir, 'missing'))).toBeNull();
  });

  it('keeps half of what is left after the reserve, and sets no limit when the descriptors are unknown', () => {
    expect(defaultMaxConnections(256)).toBe(96);
    expect(defaultMaxConnections(1_048_576)).toBe(524_256);
    expect(defaultMaxConnections(10)).toBe(1);
    expect(defaultMaxConnections(null)).toBe(0);
  });

  it('never sets a header deadline past the request deadline, and checks deadlines often enough', () => {
    const options = serverOptions(
      {
        headersTimeoutMs: 30_000,
        requestTimeoutMs: 10_000,
        bodyIdleTimeoutMs: 0,
        idleTimeoutMs: 0,
        maxConnections: null,
      },
      120_000,
    );
    expect(options.headersTimeout).toBe(10_000);
    expect(options.connectionsCheckingInterval).toBe(1_000);
  });
});
