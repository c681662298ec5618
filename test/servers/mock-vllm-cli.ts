// `npm run mock-vllm -- --port 8000 [--tokenizer qwen3 --logprobs-mode processed --ttft-ms 50 --inter-token-ms 10]`
// starts the engine twin for manual trials (`--dialect sglang` for SGLang's routes and shapes; `--policy agent` for
// a tool-using, reasoning model that drives a coding harness). GET /_twin/ledger and /_twin/state show what it did.
import { Command, InvalidArgumentError, Option } from 'commander';
import { startEngineTwin } from './mock-vllm.js';

function nonNegative(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0');
  return n;
}

const program = new Command('mock-vllm')
  .description('The vLLM engine twin (OpenAI-compatible, return_token_ids, logprobs, dev routes, faults)')
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--port <port>', 'port (0 = any free port)', nonNegative, 8000)
  .option('--model <name>', 'served model name', 'mock-model')
  .option('--any-model', 'accept any model name instead of answering 404', false)
  .addOption(
    new Option('--tokenizer <name>', 'tokenizer and chat template').choices(['chars', 'qwen3']).default('chars'),
  )
  .addOption(new Option('--dialect <engine>', 'the engine it speaks like').choices(['vllm', 'sglang']).default('vllm'))
  .addOption(
    new Option('--logprobs-mode <mode>', 'vLLM --logprobs-mode (raw_logprobs / processed_logprobs)')
      .choices(['raw', 'processed', 'raw_logprobs', 'processed_logprobs'])
      .default('raw'),
  )
  .addOption(
    new Option('--policy <name>', 'the model: scripted answers, or a tool-using agent that thinks')
      .choices(['default', 'agent'])
      .default('default'),
  )
  .option('--agent-steps <n>', 'agent policy: tool calls before its plain answer', nonNegative, 2)
  .option('--reasoning', 'qwen3: think (a <think> block) before answering', false)
  .addOption(
    new Option('--reasoning-parser <name>', 'qwen3: vLLM --reasoning-parser')
      .choices(['qwen3', 'deepseek_r1', 'none'])
      .default('qwen3'),
  )
  .addOption(
    new Option('--reasoning-field <name>', 'where parsed reasoning goes')
      .choices(['reasoning', 'reasoning_content', 'both'])
      .default('reasoning'),
  )
  .option('--enable-prompt-tokens-details', 'report usage.prompt_tokens_details.cached_tokens', false)
  .option('--pace-non-stream', 'pace non-stream answers like streams (so they can be paused)', false)
  .option('--latency-ms <ms>', 'non-stream answer delay', nonNegative, 0)
  .option('--ttft-ms <ms>', 'stream: delay before the first chunk', nonNegative, 0)
  .option('--inter-token-ms <ms>', 'stream: delay between chunks', nonNegative, 0)
  .option('--tokens-per-chunk <n>', 'stream: generated tokens per chunk', nonNegative, 1)
  .option('--max-model-len <n>', 'context length', nonNegative, 32768)
  .option('--floor-logprob-every <k>', 'every k-th token has no logprob entry (-9999.0 / null)', nonNegative, 0)
  .option('--keep-alive-timeout-ms <ms>', 'close idle keep-alive sockets after this long', nonNegative, 5000)
  .option('--random-order', 'answer concurrent requests in a random order', false)
  .option('--fault <spec>', 'fault applied to every generation request (x-mock-fault syntax)');

program.parse();
const opts = program.opts<{
  host: string;
  port: number;
  model: string;
  anyModel: boolean;
  tokenizer: 'chars' | 'qwen3';
  dialect: 'vllm' | 'sglang';
  logprobsMode: 'raw' | 'processed' | 'raw_logprobs' | 'processed_logprobs';
  policy: 'default' | 'agent';
  agentSteps: number;
  reasoning: boolean;
  reasoningParser: 'qwen3' | 'deepseek_r1' | 'none';
  reasoningField: 'reasoning' | 'reasoning_content' | 'both';
  enablePromptTokensDetails: boolean;
  paceNonStream: boolean;
  latencyMs: number;
  ttftMs: number;
  interTokenMs: number;
  tokensPerChunk: number;
  maxModelLen: number;
  floorLogprobEvery: number;
  keepAliveTimeoutMs: number;
  randomOrder: boolean;
  fault?: string;
}>();

const twin = await startEngineTwin({
  host: opts.host,
  port: opts.port,
  model: opts.model,
  anyModel: opts.anyModel,
  tokenizer: opts.tokenizer,
  dialect: opts.dialect,
  logprobsMode: opts.logprobsMode.startsWith('processed') ? 'processed' : 'raw',
  policy: opts.policy,
  agentSteps: opts.agentSteps,
  reasoning: opts.reasoning,
  reasoningParser: opts.reasoningParser === 'none' ? null : opts.reasoningParser,
  reasoningField: opts.reasoningField,
  enablePromptTokensDetails: opts.enablePromptTokensDetails,
  paceNonStream: opts.paceNonStream,
  latencyMs: opts.latencyMs,
  ttftMs: opts.ttftMs,
  interTokenMs: opts.interTokenMs,
  tokensPerChunk: Math.max(1, opts.tokensPerChunk),
  maxModelLen: opts.maxModelLen,
  floorLogprobEvery: opts.floorLogprobEvery,
  keepAliveTimeoutMs: opts.keepAliveTimeoutMs,
  randomOrder: opts.randomOrder,
  // Only the newest records are ever looked at here; keeping all of them grows without bound under load.
  maxRecordedRequests: 100,
});
if (opts.fault) twin.setFault(opts.fault);
process.stdout.write(
  `mock-vllm (${opts.dialect}, ${opts.tokenizer}, ${opts.policy} policy) serving ${twin.model} at ${twin.url}\n`,
);

const stop = () => {
  void twin.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
