// Starts one real vLLM server per release for the whole real-engine suite and hands their URLs to the tests
// (`inject('vllm')`). A server that does not start fails the suite: a missing real engine is a failure, not a skip.
import type { TestProject } from 'vitest/node';
import { type RealVllm, realEngineHome, startRealVllm, type VllmRelease } from './vllm-server.js';

interface ProvidedServer {
  readonly url: string;
  readonly baseUrl: string;
  readonly servedName: string;
  readonly modelDir: string;
  readonly startMs: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    vllm: ProvidedServer;
    vllmOld: ProvidedServer;
  }
}

const provided = (server: RealVllm): ProvidedServer => ({
  url: server.url,
  baseUrl: server.baseUrl,
  servedName: server.servedName,
  modelDir: server.modelDir,
  startMs: server.startMs,
});

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const servers: RealVllm[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  // Servers already running (test/real-engines/serve.ts) are reused when named; the suite starts the others.
  const running = (url: string | undefined): ProvidedServer | null =>
    url
      ? {
          url: `${url}/v1`,
          baseUrl: url,
          servedName: 'tiny',
          modelDir: realEngineHome().modelDir('qwen3-tiny'),
          startMs: 0,
        }
      : null;
  const start = async (release: VllmRelease): Promise<ProvidedServer> => {
    const server = await startRealVllm({ release });
    servers.push(server);
    console.log(`real vLLM ${server.release} healthy in ${server.startMs} ms at ${server.baseUrl}`);
    return provided(server);
  };
  try {
    // Both start at once: most of a start is Python imports and waiting, so together they take less wall time.
    // allSettled: a server that starts after the other failed is still stopped below.
    const [current, old] = await Promise.allSettled([
      running(process.env.ROLLGATE_REAL_VLLM_URL) ?? start('0.32.0'),
      running(process.env.ROLLGATE_REAL_VLLM_OLD_URL) ?? start('0.29.0'),
    ]);
    if (current.status === 'rejected') throw current.reason;
    if (old.status === 'rejected') throw old.reason;
    project.provide('vllm', current.value);
    project.provide('vllmOld', old.value);
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}
