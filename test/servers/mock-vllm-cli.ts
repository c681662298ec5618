// `npm run mock-vllm -- --port 8000 [--ttft-ms 50 --inter-token-ms 10]` starts the vLLM stand-in for manual trials.
import { Command, InvalidArgumentError } from 'commander';
import { startMockVllm } from './mock-vllm.js';

function nonNegative(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0');
  return n;
}

const program = new Command('mock-vllm')
  .description('A deterministic vLLM stand-in (OpenAI-compatible, return_token_ids, logprobs, faults)')
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--port <port>', 'port (0 = any free port)', nonNegative, 8000)
  .option('--model <name>', 'served model name', 'mock-model')
  .option('--any-model', 'accept any model name instead of answering 404', false)
  .option('--latency-ms <ms>', 'non-stream answer delay', nonNegative, 0)
  .option('--ttft-ms <ms>', 'stream: delay before the first chunk', nonNegative, 0)
  .option('--inter-token-ms <ms>', 'stream: delay between chunks', nonNegative, 0)
  .option('--tokens-per-chunk <n>', 'stream: generated tokens per chunk', nonNegative, 1)
  .option('--max-model-len <n>', 'context length', nonNegative, 32768)
  .option('--keep-alive-timeout-ms <ms>', 'close idle keep-alive sockets after this long', nonNegative, 5000)
  .option('--random-order', 'answer concurrent requests in a random order', false)
  .option('--fault <spec>', 'fault applied to every generation request (x-mock-fault syntax)');

program.parse();
const opts = program.opts<{
  host: string;
  port: number;
  model: string;
  anyModel: boolean;
  latencyMs: number;
  ttftMs: number;
  interTokenMs: number;
  tokensPerChunk: number;
  maxModelLen: number;
  keepAliveTimeoutMs: number;
  randomOrder: boolean;
  fault?: string;
}>();

const mock = await startMockVllm({
  host: opts.host,
  port: opts.port,
  model: opts.model,
  anyModel: opts.anyModel,
  latencyMs: opts.latencyMs,
  ttftMs: opts.ttftMs,
  interTokenMs: opts.interTokenMs,
  tokensPerChunk: Math.max(1, opts.tokensPerChunk),
  maxModelLen: opts.maxModelLen,
  keepAliveTimeoutMs: opts.keepAliveTimeoutMs,
  randomOrder: opts.randomOrder,
  // Only the newest records are ever looked at here; keeping all of them grows without bound under load.
  maxRecordedRequests: 100,
});
if (opts.fault) mock.setFault(opts.fault);
process.stdout.write(`mock-vllm serving ${mock.model} at ${mock.url}\n`);

const stop = () => {
  void mock.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
