// The gateway process of bench/proxy.ts: a real `createGateway` on the default store (SQLite, in a file the parent
// chose), `warn` logging, pinned to its own core by the parent. It prints its URL, then answers IPC `stats` requests
// with its own CPU time, RSS and event-loop delay (proxy-child-stats.ts).
// `raw-model` is `mock-model` on the same backend with `agentView: 'raw'`: the relay without the agent view, to
// measure what cutting injected ids and logprobs out of the answer costs.
import { configSchema } from '../config/schema.js';
import { createGateway } from '../src/app.js';
import { answerStats } from './proxy-child-stats.js';
import { timeSteps } from './store-step-times.js';

interface Args {
  readonly fastUrl: string;
  readonly slowUrl: string;
  readonly storePath: string;
  /** The default store (SQLite), or memory to tell what the SQLite store adds. */
  readonly storeKind?: 'sqlite' | 'memory';
  /** bench/proxy-recording.ts: time the store's steps (store-step-times.ts) and answer IPC `steps` with them. */
  readonly stepTimes?: boolean;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
if (args.stepTimes === true) {
  // Before the gateway is built, so every store method it calls is the wrapped one.
  const steps = timeSteps();
  process.on('message', (message: unknown) => {
    if (message === 'steps') process.send?.(steps());
  });
}
const config = configSchema.parse({
  server: { host: '127.0.0.1', port: 0, bodyLimitBytes: 64 * 1024 * 1024 },
  store: args.storeKind === 'memory' ? { kind: 'memory' } : { kind: 'sqlite', path: args.storePath },
  logging: { level: 'warn' },
  models: [
    { name: 'mock-model', backends: [{ url: args.fastUrl }] },
    { name: 'raw-model', upstreamModel: 'mock-model', agentView: 'raw', backends: [{ url: args.fastUrl }] },
    { name: 'slow-model', upstreamModel: 'mock-model', backends: [{ url: args.slowUrl }] },
  ],
});
const gateway = await createGateway(config);
const { url } = await gateway.listen();
process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
answerStats(() => gateway.close());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void gateway.close().then(() => process.exit(0));
  });
}
