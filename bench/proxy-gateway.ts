// The gateway process of bench/proxy.ts: a real `createGateway` on an in-memory store, pinned to its own
// core by the parent. It prints its URL, then answers IPC `stats` requests with its own CPU time and RSS.
// `raw-model` is `mock-model` on the same backend with `agentView: 'raw'`: the relay without the agent view, to
// measure what cutting injected ids and logprobs out of the answer costs.
import { configSchema } from '../config/schema.js';
import { createGateway } from '../src/app.js';
import { silentLogger } from '../src/logger.js';

interface Args {
  readonly fastUrl: string;
  readonly slowUrl: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const config = configSchema.parse({
  server: { host: '127.0.0.1', port: 0, bodyLimitBytes: 64 * 1024 * 1024 },
  store: { kind: 'memory' },
  logging: { level: 'silent' },
  models: [
    { name: 'mock-model', backends: [{ url: args.fastUrl }] },
    { name: 'raw-model', upstreamModel: 'mock-model', agentView: 'raw', backends: [{ url: args.fastUrl }] },
    { name: 'slow-model', upstreamModel: 'mock-model', backends: [{ url: args.slowUrl }] },
  ],
});
const gateway = await createGateway(config, { logger: silentLogger });
const { url } = await gateway.listen();
process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
process.on('message', (message: unknown) => {
  if (message === 'stats') {
    const cpu = process.cpuUsage();
    process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, rss: process.memoryUsage().rss });
  } else if (message === 'close') {
    void gateway.close().then(() => process.exit(0));
  }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void gateway.close().then(() => process.exit(0));
  });
}
