// docs/failure-classes.md#42: no file descriptor, socket or timer survives a gateway's close(). 50 start/stop cycles, each
// with a proxied call (so the backend pool holds a keep-alive socket) and the OTLP exporter sending to a
// collector, leave the open FD count and the live TCP handles where they were.
import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const CYCLES = 50;
const FD_DIR = '/proc/self/fd';
const hasProcFd = (() => {
  try {
    readdirSync(FD_DIR);
    return true;
  } catch {
    return false;
  }
})();

let mock: MockVllm;
let collector: Server;
let collectorUrl: string;
let collected = 0;

beforeAll(async () => {
  mock = await startMockVllm();
  collector = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      collected++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;
});
afterAll(async () => {
  await mock?.close();
  collector?.closeAllConnections();
  await new Promise((r) => collector?.close(r));
});

function openFds(): number {
  return readdirSync(FD_DIR).length;
}

function handles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** Lets sockets closed by the peer finish closing on our side. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 20));
}

async function cycle(n: number): Promise<void> {
  const gw = await startTestGateway({
    models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
    tracing: { otlp: { url: collectorUrl, protocol: 'http/protobuf' } },
  });
  // The agent's own pool is the agent's business: destroyed each cycle, so only the gateway's sockets count.
  const agentPool = new Agent();
  try {
    const client = new OpenAI({
      baseURL: `${gw.url}/rollout/ro-fd-${n}/attempt/a1/v1`,
      apiKey: 'k',
      maxRetries: 0,
      fetch: ((url: string, init?: Record<string, unknown>) =>
        undiciFetch(url, { ...init, dispatcher: agentPool })) as unknown as typeof fetch,
    });
    await client.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] });
    for await (const _ of await client.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    }))
      void _;
  } finally {
    await agentPool.destroy();
    await gw.close();
  }
}

it.skipIf(!hasProcFd)(
  `keeps open FDs and TCP handles flat across ${CYCLES} gateway start/stop cycles`,
  { timeout: 60_000 },
  async () => {
    // Two warm-up cycles load every module and lazily created global (undici's, the OTLP exporter's).
    await cycle(-1);
    await cycle(-2);
    await settle();
    const fdsBefore = openFds();
    const handlesBefore = handles();
    for (let n = 0; n < CYCLES; n++) await cycle(n);
    await settle();
    const fdsAfter = openFds();
    const handlesAfter = handles();
    console.info(
      `F.42: fds ${fdsBefore} -> ${fdsAfter}; handles ${JSON.stringify(handlesBefore)} -> ${JSON.stringify(handlesAfter)}`,
    );
    // One leaked socket per cycle would be +50 (+100 with the exporter): a small slack absorbs vitest's own pipes.
    expect(fdsAfter - fdsBefore).toBeLessThanOrEqual(3);
    expect(handlesAfter.TCPSocketWrap ?? 0).toBeLessThanOrEqual(handlesBefore.TCPSocketWrap ?? 0);
    expect(handlesAfter.TCPServerWrap ?? 0).toBeLessThanOrEqual(handlesBefore.TCPServerWrap ?? 0);
    expect(handlesAfter.Timeout ?? 0).toBeLessThanOrEqual((handlesBefore.Timeout ?? 0) + 2);
    // The exporter really sent, so its sockets were opened and had to be closed.
    expect(collected).toBeGreaterThan(0);
  },
);
