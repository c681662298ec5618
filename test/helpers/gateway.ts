// A gateway on a real socket for integration tests: port 0, in-memory store, silent logs.
// Overrides are the same shape as proxy.config.json (input form: keys with defaults may be left out).
import type { z } from 'zod';
import { deepMerge } from '../../config/load.js';
import { configSchema } from '../../config/schema.js';
import { type CreateGatewayOptions, createGateway, type Gateway } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { type MockVllm, type MockVllmOptions, startMockVllm } from '../servers/mock-vllm.js';

export type ConfigOverrides = z.input<typeof configSchema>;

export interface TestGateway {
  /** e.g. `http://127.0.0.1:41234` (no trailing slash). */
  readonly url: string;
  readonly gateway: Gateway;
  /** Idempotent. */
  close(): Promise<void>;
}

export async function startTestGateway(
  overrides: ConfigOverrides = {},
  options: CreateGatewayOptions = {},
): Promise<TestGateway> {
  const base = { server: { host: '127.0.0.1', port: 0 }, store: { kind: 'memory' }, logging: { level: 'silent' } };
  const config = configSchema.parse(deepMerge(base, overrides as Record<string, unknown>));
  const gateway = await createGateway(config, { logger: silentLogger, ...options });
  try {
    const { url } = await gateway.listen();
    return { url, gateway, close: () => gateway.close() };
  } catch (error) {
    await gateway.close();
    throw error;
  }
}

export interface GatewayWithMock extends TestGateway {
  readonly mock: MockVllm;
}

/** A test gateway in front of a fresh vLLM stand-in serving `mock-model`; close() stops both. */
export async function startGatewayWithMock(mockOptions: MockVllmOptions = {}): Promise<GatewayWithMock> {
  const mock = await startMockVllm(mockOptions);
  try {
    const gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] });
    return {
      ...gw,
      mock,
      async close() {
        await gw.close();
        await mock.close();
      },
    };
  } catch (error) {
    await mock.close();
    throw error;
  }
}
