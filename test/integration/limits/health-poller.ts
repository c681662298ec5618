// Times another client's /health while a request runs. The poller lives in a worker thread with its own event loop
// and its own keep-alive connection, so the test's own work (building a body, reading an answer) never delays a
// probe; a probe the gateway cannot answer for 3 s reads 3 s.
//
// Each probe also reads how much CPU the gateway's main thread (its event loop) used between sending the probe and
// its answer, from Linux's per-thread scheduler statistics. On a machine shared with other jobs a probe can wait
// for a core long after the gateway is free; the CPU time is what the gateway's own work held the loop, whatever
// the neighbours do.
import { Worker } from 'node:worker_threads';

const POLLER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const schedstat = '/proc/' + workerData.pid + '/task/' + workerData.pid + '/schedstat';
let stop = false;
const probes = [];
parentPort.on('message', () => { stop = true; });
function cpuMs() {
  try { return Number(readFileSync(schedstat, 'utf8').split(' ')[0]) / 1e6; } catch { return null; }
}
function probe() {
  return new Promise((resolve) => {
    const cpu = cpuMs();
    const started = performance.now();
    const done = () => {
      const after = cpuMs();
      resolve({ wallMs: performance.now() - started, cpuMs: cpu === null || after === null ? null : after - cpu });
    };
    const req = http.get(workerData.url + '/health', { agent }, (res) => {
      res.resume();
      res.on('end', done);
    });
    req.on('error', () => resolve({ wallMs: Number.POSITIVE_INFINITY, cpuMs: null }));
  });
}
(async () => {
  await probe();
  parentPort.postMessage({ ready: true });
  while (!stop) {
    probes.push(await probe());
    await new Promise((r) => setTimeout(r, workerData.intervalMs));
  }
  agent.destroy();
  parentPort.postMessage({ probes });
})();
`;

interface Probe {
  readonly wallMs: number;
  readonly cpuMs: number | null;
}

export interface HealthFigures {
  /** Probes answered while the request ran. */
  readonly probes: number;
  /** The slowest /health answer, ms of wall time. */
  readonly maxHealthMs: number;
  /**
   * The most CPU the gateway's event-loop thread used while one probe waited for its answer, ms; null where Linux's
   * scheduler statistics cannot be read.
   */
  readonly maxHealthCpuMs: number | null;
  /** The request's own wall time, ms. */
  readonly requestMs: number;
}

/**
 * Runs `work` while another client polls `<url>/health` every `intervalMs`; `pid` is the gateway's process, whose
 * main thread's CPU time each probe reads. Returns the figures and work's result.
 */
export async function timeHealthDuring<T>(
  target: { readonly url: string; readonly pid: number },
  work: () => Promise<T>,
  intervalMs = 5,
): Promise<{ figures: HealthFigures; result: T }> {
  const worker = new Worker(POLLER, { eval: true, workerData: { ...target, intervalMs } });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
    });
    const started = performance.now();
    const result = await work();
    const requestMs = performance.now() - started;
    // A few more probes after the request: a stall at its very end is caught too.
    await new Promise((r) => setTimeout(r, intervalMs * 4));
    const probes = await new Promise<Probe[]>((resolve, reject) => {
      worker.on('message', (message: { probes?: Probe[] }) => {
        if (message.probes !== undefined) resolve(message.probes);
      });
      worker.once('error', reject);
      worker.postMessage('stop');
    });
    const cpu = probes.map((p) => p.cpuMs);
    return {
      result,
      figures: {
        probes: probes.length,
        maxHealthMs: Math.max(...probes.map((p) => p.wallMs)),
        maxHealthCpuMs: cpu.some((ms) => ms === null) ? null : Math.max(...(cpu as number[])),
        requestMs,
      },
    };
  } finally {
    await worker.terminate();
  }
}
