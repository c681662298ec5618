// The engine process of bench/trajectories.ts: the engine twin in qwen3 mode with the tool-loop model, in its own
// process so the parent's CPU time is the gateway's and the agents' only. Prints its URL, then answers IPC `stats`
// with its request counts by path and its CPU time.
import { toolLoopModel } from '../test/helpers/tool-agent.js';
import { startEngineTwin } from '../test/servers/mock-vllm.js';

const toolCallsPerQuery = Number(process.argv[2] ?? 3);
const twin = await startEngineTwin({
  tokenizer: 'qwen3',
  reasoning: true,
  respond: toolLoopModel({ toolCallsPerQuery }),
  maxRecordedRequests: 1_000_000,
});
process.stdout.write(`${JSON.stringify({ url: twin.url, baseUrl: twin.baseUrl, model: twin.model })}\n`);
process.on('message', (message: unknown) => {
  if (message === 'stats') {
    const byPath: Record<string, number> = {};
    for (const r of twin.requests) byPath[r.path] = (byPath[r.path] ?? 0) + 1;
    const cpu = process.cpuUsage();
    process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, byPath });
  } else if (message === 'close') {
    void twin.close().then(() => process.exit(0));
  }
});
