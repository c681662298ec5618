import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, configEnvKeys, envNameFor, loadConfig, parseStoreSpec } from '../../../config/load.js';
import { configJsonSchema } from '../../../config/write-json-schema.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-config-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** What `store.retention` resolves to when the config says nothing: keep everything. */
const KEEP_EVERYTHING = { maxAgeS: null, maxRollouts: null, afterBatchAck: false, intervalS: 60 };

function write(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('uses built-in defaults when there is no file', () => {
    const config = loadConfig({ cwd: dir, env: {} });
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8080, keepAliveTimeoutMs: 120_000 });
    expect(config.store).toEqual({ kind: 'sqlite', path: './data/rollgate.db', retention: KEEP_EVERYTHING });
    expect(config.models).toEqual([]);
  });

  it('reads ./proxy.config.json by default and an explicit --config path', () => {
    write('proxy.config.json', { server: { port: 9001 } });
    expect(loadConfig({ cwd: dir, env: {} }).server.port).toBe(9001);
    const other = write('other.json', { server: { port: 9002 } });
    expect(loadConfig({ cwd: dir, file: other, env: {} }).server.port).toBe(9002);
  });

  it('layers file < ROLLGATE_* env < flags', () => {
    write('proxy.config.json', { server: { port: 9001, host: '0.0.0.0' }, store: { kind: 'memory' } });
    const config = loadConfig({
      cwd: dir,
      env: {
        ROLLGATE_SERVER_PORT: '9100',
        ROLLGATE_STORE_KIND: 'sqlite',
        ROLLGATE_STORE_PATH: '/tmp/x.db',
        ROLLGATE_SERVER_BODY_LIMIT_BYTES: '1024',
        ROLLGATE_SERVER_CORS_ORIGINS: 'http://a, http://b',
        ROLLGATE_ROLLOUTS_AUTO_CREATE: 'false',
        ROLLGATE_UNRELATED: 'ignored',
      },
      flags: { port: '9200' },
    });
    expect(config.server).toMatchObject({ port: 9200, host: '0.0.0.0', bodyLimitBytes: 1024 });
    expect(config.server.corsOrigins).toEqual(['http://a', 'http://b']);
    expect(config.store).toEqual({ kind: 'sqlite', path: '/tmp/x.db', retention: KEEP_EVERYTHING });
    expect(config.rollouts.autoCreate).toBe(false);
  });

  it('derives env names from every config path', () => {
    expect(envNameFor(['server', 'bodyLimitBytes'])).toBe('ROLLGATE_SERVER_BODY_LIMIT_BYTES');
    const names = [...configEnvKeys().keys()];
    for (const name of [
      'ROLLGATE_SERVER_PORT',
      'ROLLGATE_SERVER_HOST',
      'ROLLGATE_STORE_KIND',
      'ROLLGATE_STORE_PATH',
      'ROLLGATE_STORE_URL',
      'ROLLGATE_LOGGING_LEVEL',
      'ROLLGATE_MODELS',
    ]) {
      expect(names).toContain(name);
    }
    const models = [{ name: 'm', backends: [{ url: 'http://h:1/v1' }] }];
    expect(loadConfig({ cwd: dir, env: { ROLLGATE_MODELS: JSON.stringify(models) } }).models[0]?.name).toBe('m');
  });

  it('turns --store and --backend/--model into config', () => {
    expect(loadConfig({ cwd: dir, env: {}, flags: { store: 'memory' } }).store.kind).toBe('memory');
    expect(loadConfig({ cwd: dir, env: {}, flags: { store: 'sqlite:/tmp/a.db' } }).store).toEqual({
      kind: 'sqlite',
      path: '/tmp/a.db',
      retention: KEEP_EVERYTHING,
    });
    expect(parseStoreSpec('postgres://u@h/db')).toEqual({ kind: 'postgres', url: 'postgres://u@h/db' });
    const quick = loadConfig({ cwd: dir, env: {}, flags: { backend: 'http://127.0.0.1:8000/v1', model: 'qwen' } });
    expect(quick.models).toHaveLength(1);
    expect(quick.models[0]).toMatchObject({
      name: 'qwen',
      backends: [{ url: 'http://127.0.0.1:8000/v1', type: 'vllm' }],
    });
  });

  it('names the key path and the reason for invalid values from any layer', () => {
    write('proxy.config.json', { server: { port: 'eighty' } });
    const fromFile = configErrorOf(() => loadConfig({ cwd: dir, env: {} }));
    expect(fromFile.message).toContain('server.port: expected number');
    expect(fromFile.message).toContain('proxy.config.json');
    expect(fromFile.issues[0]?.path).toBe('server.port');

    const fromEnv = configErrorOf(() => loadConfig({ cwd: join(dir, 'none'), env: { ROLLGATE_SERVER_PORT: 'abc' } }));
    expect(fromEnv.message).toContain('server.port: expected number');

    const unknown = configErrorOf(() => loadConfig({ cwd: dir, file: write('u.json', { sever: {} }), env: {} }));
    expect(unknown.message).toMatch(/unknown key.*sever/);

    expect(configErrorOf(() => loadConfig({ cwd: dir, env: {}, flags: { store: 'mysql://x' } })).message).toMatch(
      /^Invalid config: store:/,
    );
    expect(configErrorOf(() => loadConfig({ cwd: dir, file: write('bad.json', '{nope'), env: {} })).message).toMatch(
      /not valid JSON/,
    );
    expect(configErrorOf(() => loadConfig({ cwd: dir, file: join(dir, 'missing.json'), env: {} })).message).toMatch(
      /cannot read/,
    );
    const range = configErrorOf(() => loadConfig({ cwd: dir, env: {}, flags: { port: 70000 } }));
    expect(range.issues[0]?.path).toBe('server.port');
  });
});

describe('the shipped config files', () => {
  it('proxy.config.json is valid and references the generated schema', () => {
    const config = loadConfig({ cwd: process.cwd(), env: {} });
    expect(config.$schema).toBe('./proxy.config.schema.json');
    expect(config.store).toEqual({ kind: 'sqlite', path: './data/rollgate.db', retention: KEEP_EVERYTHING });
    expect(config.models).toMatchObject([
      { name: 'default', backends: [{ url: 'http://127.0.0.1:8000/v1', type: 'vllm' }] },
    ]);
    expect(config.algorithms).toEqual([]);
  });

  it('proxy.config.schema.json is up to date with config/schema.ts (run npm run config:schema)', async () => {
    const { readFileSync } = await import('node:fs');
    const committed = JSON.parse(readFileSync('proxy.config.schema.json', 'utf8'));
    expect(committed).toEqual(configJsonSchema());
  });
});
