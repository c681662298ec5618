// Starts a real vLLM server from the suite's environment and keeps it in the foreground, for working on the suite
// or trying rollgate against a real engine by hand:
//   npx tsx test/real-engines/serve.ts [--release 0.32.0|0.29.0] [--model qwen3-tiny|qwen3-moe-tiny] [-- extra vllm args]
// It prints the base URL once healthy; Ctrl-C stops it. The suite reuses running servers given as
// ROLLGATE_REAL_VLLM_URL (0.32.0) and ROLLGATE_REAL_VLLM_OLD_URL (0.29.0) instead of starting its own.
import { parseArgs } from 'node:util';
import { startRealVllm, type TinyModel, type VllmRelease } from './vllm-server.js';

const { values, positionals } = parseArgs({
  options: { release: { type: 'string', default: '0.32.0' }, model: { type: 'string', default: 'qwen3-tiny' } },
  allowPositionals: true,
});
const server = await startRealVllm({
  release: values.release as VllmRelease,
  model: values.model as TinyModel,
  extraArgs: positionals,
});
console.log(
  `vLLM ${server.release} healthy in ${server.startMs} ms: ${server.baseUrl} (served as "${server.servedName}")`,
);
const stop = () => {
  void server.stop().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
