// The engine twin: a real HTTP server (node:http) that behaves like a current vLLM OpenAI-compatible server as
// vLLM's source defines it, deterministic and CPU-only. The code lives in ./twin/ (one concern per file); this
// entry re-exports the API. docs/engine-twin.md describes what it emulates.
//
// Exported API
//   startEngineTwin(options?) / startMockVllm(options?): Promise<MockVllm>   (the same function, two names)
//   MockVllm: url (base URL ending in /v1), baseUrl (without /v1), port, model, requests (log), ledger (ground
//             truth of every generation), setFault(), clearFaults(), waitFor(predicate), close() (idempotent)
//   Modes (option `tokenizer`): 'chars' (default, the fast mode: one id per code point, a prefix-stable template)
//             or 'qwen3' (the real Qwen3 tokenizer and chat template, reasoning and hermes tool parsing)
//   tokenize(text) / detokenize(ids) / tokenText(id): the chars tokenizer; qwen3Tokenizer(): the Qwen3 one
//   renderChatPrompt(messages) / renderToolCall(name, argumentsJson): the chars chat template
//   parseFaultSpec(spec): the x-mock-fault header syntax -> MockFault[] (see twin/faults.ts)
//   tokenLogprob(id, position): the deterministic prompt logprob
//   responsesInputToMessages(body) / responsesToolsToChat(tools): how a /v1/responses request maps onto the chat
//             template and the `tools` a respond() sees
//   defaultRespond: what the "model" answers unless `respond` (or `policy: 'agent'`) is given
//   agentPolicy(options): the tool-using, reasoning policy of `policy: 'agent'` (STEPS_FILE, stepLine, agentFinalText
//             say what it runs and answers); argumentsFor(schema, hints): its schema-driven tool arguments
//
// Routes: /v1/chat/completions, /v1/completions, /v1/responses, /v1/models, /health, /version, /tokenize,
// /detokenize, /v1/chat/completions/render, /v1/completions/render, /inference/v1/generate, the dev routes
// (/pause, /resume, /is_paused, /abort_requests, /sleep, /wake_up, /is_sleeping, /v1/load_lora_adapter,
// /v1/unload_lora_adapter, /update_weights, /finish_weight_update, /update_weight_version, /weight_info,
// /reset_prefix_cache, ...) and /_twin/ledger, /_twin/state. With `dialect: 'sglang'`: SGLang's /v1/chat/completions,
// /v1/completions, /generate, /pause_generation, /continue_generation, /flush_cache, /update_weights_from_disk, ...
// (twin/routes-sglang*.ts), with SGLang's flat error bodies.
import { startMockVllm } from './twin/server.js';

export { agentFinalText, agentPolicy, pickTool, STEPS_FILE, stepLine } from './twin/agent-policy.js';
export type { MockChatMessage } from './twin/chat-template.js';
export { renderChatPrompt, renderToolCall } from './twin/chat-template.js';
export { parseFaultSpec } from './twin/faults.js';
export type { LedgerEndpoint, LedgerEntry } from './twin/ledger.js';
export { Ledger } from './twin/ledger.js';
export { defaultRespond, tokenLogprob } from './twin/respond.js';
export { responsesInputToMessages, responsesToolsToChat } from './twin/routes-responses.js';
export { argumentsFor } from './twin/schema-args.js';
export {
  detokenize,
  END_TOKEN_ID,
  qwen3Tokenizer,
  SPECIAL_TOKENS,
  type TokenizerName,
  type TwinTokenizer,
  tokenize,
  tokenText,
  VOCAB_SIZE,
} from './twin/tokenizer.js';
export type {
  LogprobsFaultMode,
  LogprobsMode,
  MockEndpoint,
  MockFault,
  MockPrompt,
  MockReply,
  MockReplyObject,
  MockRequestRecord,
  MockRespond,
  MockRespondContext,
  MockToolCallReply,
  MockVllm,
  MockVllmOptions,
  ReasoningField,
  ReasoningParserName,
  SetFaultOptions,
  TokenIdsFaultMode,
  TwinDialect,
  TwinPolicy,
  TwinWeights,
} from './twin/types.js';
export { startMockVllm };

/** The engine twin's own name for startMockVllm. */
export const startEngineTwin = startMockVllm;
