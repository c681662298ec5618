// A bad value is reported with where it came from: the environment variable or flag that set it, not the
// config file that happened to be loaded beside it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../config/load.js';

function dirWithConfig(config: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-config-'));
  writeFileSync(join(dir, 'proxy.config.json'), JSON.stringify(config));
  return dir;
}

function errorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('config error source', () => {
  it('names the environment variable that set the bad value', () => {
    const cwd = dirWithConfig({ server: { port: 8080 } });
    const error = errorOf(() => loadConfig({ cwd, env: { ROLLGATE_SERVER_PORT: 'eighty' } }));
    expect(error.source).toBe('ROLLGATE_SERVER_PORT');
    expect(error.message).toContain('(ROLLGATE_SERVER_PORT)');
    expect(error.message).not.toContain('proxy.config.json');
  });

  it('names the command-line flags for a bad flag value', () => {
    const cwd = dirWithConfig({ server: { port: 8080 } });
    const error = errorOf(() => loadConfig({ cwd, env: {}, flags: { port: 'eighty' } }));
    expect(error.source).toBe('command-line flags');
  });

  it('names the file for a bad value written in it', () => {
    const cwd = dirWithConfig({ server: { port: 'eighty' } });
    const error = errorOf(() => loadConfig({ cwd, env: {} }));
    expect(error.source).toBe(join(cwd, 'proxy.config.json'));
  });
});
