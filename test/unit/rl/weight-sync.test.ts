// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${field}` is the weight-load hook's placeholder syntax, not a template literal
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WeightLoadHook } from '../../../src/algorithms/rl/options.js';
import { syncWeights } from '../../../src/algorithms/rl/weight-sync.js';
import type { GatewayControl } from '../../../src/algorithms/types.js';
import { silentLogger } from '../../../src/logger.js';

interface Received {
  path: string;
  body: unknown;
}

function recordingControl(backends: string[], options: { failPause?: boolean } = {}) {
  const events: string[] = [];
  const control: GatewayControl = {
    attemptBaseUrl: () => null,
    async modelPools() {
      return [{ name: 'm', version: 0, backends }];
    },
    async pause() {
      events.push('pause');
      if (options.failPause) throw new Error('did not drain');
    },
    async resume() {
      events.push('resume');
    },
    async setModelVersion(model, version) {
      events.push(`version ${model} ${version}`);
    },
  };
  return { control, events };
}

const httpHook: WeightLoadHook = {
  type: 'http',
  path: '/load_lora_adapter',
  body: { lora_name: '${lora_name}', lora_path: '${lora_path}', version: '${version}', note: 'v${version}' },
  headers: {},
  timeoutMs: 5000,
};

describe('syncWeights', () => {
  let server: Server;
  let backendUrl: string;
  const received: Received[] = [];
  let failNext = false;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        res.writeHead(failNext ? 500 : 200).end(failNext ? 'adapter not found' : 'ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    backendUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('pauses, loads on every backend, bumps the version, resumes', async () => {
    received.length = 0;
    const { control, events } = recordingControl([backendUrl, `${backendUrl}/`]);
    await syncWeights(
      { control, model: 'm', hook: httpHook, logger: silentLogger },
      { version: 3, fields: { lora_path: '/ckpt/3', lora_name: 'policy' } },
    );
    expect(events).toEqual(['pause', 'version m 3', 'resume']);
    expect(received).toHaveLength(2);
    expect(received[0]).toEqual({
      path: '/v1/load_lora_adapter',
      body: { lora_name: 'policy', lora_path: '/ckpt/3', version: 3, note: 'v3' },
    });
  });

  it('a failed load resumes anyway and keeps the old version', async () => {
    failNext = true;
    const { control, events } = recordingControl([backendUrl]);
    await expect(
      syncWeights({ control, model: 'm', hook: httpHook, logger: silentLogger }, { version: 4, fields: {} }),
    ).rejects.toThrow(/HTTP 500 adapter not found/);
    failNext = false;
    expect(events).toEqual(['pause', 'resume']);
  });

  it('a pause that cannot drain still resumes', async () => {
    const { control, events } = recordingControl([backendUrl], { failPause: true });
    await expect(
      syncWeights({ control, model: 'm', hook: httpHook, logger: silentLogger }, { version: 5, fields: {} }),
    ).rejects.toThrow('did not drain');
    expect(events).toEqual(['pause', 'resume']);
  });

  it('a command hook runs once per backend with substituted arguments', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rollgate-rl-hook-'));
    try {
      const { control, events } = recordingControl([backendUrl]);
      const hook: WeightLoadHook = {
        type: 'command',
        command: [
          process.execPath,
          '-e',
          'require("node:fs").writeFileSync(process.argv[1], process.argv.slice(2).join(" "))',
          join(dir, 'out.txt'),
          '${version}',
          '${lora_path}',
          '${backend}',
        ],
        timeoutMs: 20_000,
      };
      await syncWeights(
        { control, model: 'm', hook, logger: silentLogger },
        { version: 6, fields: { lora_path: '/c/6' } },
      );
      expect(await readFile(join(dir, 'out.txt'), 'utf8')).toBe(`6 /c/6 ${backendUrl}`);
      expect(events).toEqual(['pause', 'version m 6', 'resume']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a gateway control that cannot pause', async () => {
    await expect(
      syncWeights(
        { control: { attemptBaseUrl: () => null }, model: 'm', hook: httpHook, logger: silentLogger },
        { version: 1, fields: {} },
      ),
    ).rejects.toThrow(/cannot be synced/);
  });
});
