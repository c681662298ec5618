// The twin's public types: options, the handle startMockVllm() returns, the respond() hook, faults and records.
import type { IncomingMessage } from 'node:http';
import type { MockChatMessage } from './chat-template.js';
import type { Ledger } from './ledger.js';
import type { TwinRoutedExperts } from './routed-experts.js';
import type { TokenizerName } from './tokenizer.js';

/** `responses` requests are rendered with the chat template, so a respond() may treat them like `chat`. */
export type MockEndpoint = 'chat' | 'completions' | 'responses';

export interface MockToolCallReply {
  name: string;
  /** An object is serialised as JSON; a string is used verbatim. */
  arguments: string | Record<string, unknown>;
  /** chars mode only: the id the tool call gets (qwen3 mode generates ids like vLLM's hermes parser). */
  id?: string;
}

export interface MockReplyObject {
  content?: string;
  toolCalls?: MockToolCallReply[];
  /** qwen3 mode: the text of the `<think>` block (implies thinking unless the request disabled it). */
  reasoning?: string;
}

export type MockReply = string | MockReplyObject;

export interface MockPrompt {
  endpoint: MockEndpoint;
  /** The rendered prompt (chat template applied for chat). */
  text: string;
  tokenIds: number[];
  /** Chat and responses (the Responses input converted to chat messages). */
  messages?: MockChatMessage[];
}

/** The weights that compute a token: the base weights and, when the request names one, a LoRA adapter. */
export interface TwinWeights {
  /** Counts base weight updates (POST /update_weights); 0 = the weights the twin started with. */
  readonly base: number;
  /** The label set by /finish_weight_update or /update_weight_version (what GET /weight_info reports). */
  readonly label: string | null;
  readonly lora: { readonly name: string; readonly id: number; readonly version: number; readonly path: string } | null;
  /** Set after /sleep?level=2 until the next weight update: the weights were discarded. */
  readonly discarded: boolean;
  /** A stable string identity, e.g. "base@1+lora:math#1v2". */
  readonly key: string;
}

export interface MockRespondContext {
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
  choiceIndex: number;
  /** Completions with several prompts: which prompt. */
  promptIndex: number;
  /** In the chat shape `{type:"function", function:{name,...}}`, also for /v1/responses. */
  tools: unknown[];
  /** The weights this answer is computed under; respond() is called again when they change mid-generation. */
  weights: TwinWeights;
}

export type MockRespond = (prompt: MockPrompt, context: MockRespondContext) => MockReply;

export type TokenIdsFaultMode = 'omit' | 'null' | 'prompt-only';
export type LogprobsFaultMode = 'short' | 'long' | 'null' | 'nan';

export type MockFault =
  | { kind: 'status'; status: number; message?: string; html?: boolean; retryAfter?: string }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'close-after'; chunks: number }
  | { kind: 'garbage-after'; chunks: number }
  | { kind: 'error-event-after'; chunks: number; status?: number; message?: string }
  | { kind: 'slow-first-byte'; delayMs: number }
  | { kind: 'token-ids'; mode: TokenIdsFaultMode }
  | { kind: 'logprobs'; mode: LogprobsFaultMode }
  | { kind: 'legacy-tool-stream' };

export interface SetFaultOptions {
  /** Apply to this many matching requests, then expire (default: until clearFaults()). */
  times?: number;
  /** Paths the fault applies to (default: /v1/chat/completions, /v1/completions and /v1/responses). */
  paths?: string[];
}

export interface MockRequestRecord {
  seq: number;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body; undefined for GET or a body that is not JSON. */
  body: unknown;
  rawBody: string;
  receivedAt: number;
  faults: MockFault[];
  status?: number;
  stream?: boolean;
  /** Data events written (streams). */
  chunksSent: number;
  /** Generated tokens carried by the events written so far (streams). */
  tokensSent: number;
  /** Tokens generated so far, streamed or not (waitFor(r => r.tokensGenerated >= k) finds a request mid-generation). */
  tokensGenerated: number;
  /** The generation's response id (`chatcmpl-...`, `cmpl-...`), once known. */
  responseId?: string;
  /** Set when the response finished. */
  completedAt?: number;
  /** Set when the client went away before the response finished. */
  abortedAt?: number;
}

/** Which logprobs the sampler reports (vLLM --logprobs-mode raw_logprobs | processed_logprobs). */
export type LogprobsMode = 'raw' | 'processed';
export type ReasoningParserName = 'qwen3' | 'deepseek_r1';
export type ReasoningField = 'reasoning' | 'reasoning_content' | 'both';
/** The built-in respond(): the default scripted answers, or the agent policy. */
export type TwinPolicy = 'default' | 'agent';
/** The engine the twin speaks like: vLLM, or SGLang's OpenAI and native routes (routes-sglang*.ts). */
export type TwinDialect = 'vllm' | 'sglang';

export interface MockVllmOptions {
  /** Served model name (default "mock-model"). */
  model?: string;
  /** Extra accepted model names; a request for any other model is a 404 like vLLM. */
  aliases?: string[];
  /** Accept any model name (default false). */
  anyModel?: boolean;
  host?: string;
  port?: number;
  /** Non-stream: delay before the response. */
  latencyMs?: number;
  /** Stream: delay before headers + the first chunks. */
  ttftMs?: number;
  /** Stream: delay between later chunks. */
  interTokenMs?: number;
  /** Generated tokens per stream chunk (default 1). */
  tokensPerChunk?: number;
  /** Default max tokens when the request sets none (vLLM: chat = context left, completions = 16). */
  maxTokens?: number;
  /** Context length (default 32768): longer prompts are a vLLM-style 400. */
  maxModelLen?: number;
  /** Answer concurrent requests in a random order: each gets a seeded random extra delay. */
  randomOrder?: boolean | { maxDelayMs?: number; seed?: number };
  /** Idle keep-alive sockets are closed after this many ms (uvicorn's default is 5 s). */
  keepAliveTimeoutMs?: number;
  /** Decides what the "model" answers; default: see defaultRespond. Takes precedence over `policy`. */
  respond?: MockRespond;
  /**
   * The built-in "model" when no `respond` is given: `default` (defaultRespond) or `agent`, a tool-using, reasoning
   * policy that drives a real harness through its tool loop (agent-policy.ts, docs/engine-twin.md).
   */
  policy?: TwinPolicy;
  /** `agent` policy: tool calls before its plain answer (default 2). */
  agentSteps?: number;
  /** Every k-th generated token has no logprob entry: chat shows vLLM's -9999.0, completions null (default: never). */
  floorLogprobEvery?: number;
  /** Server default for return_tokens_as_token_ids (vLLM flag --return-tokens-as-token-ids). */
  returnTokensAsTokenIds?: boolean;
  /**
   * Keep only the newest this-many request records and ledger entries (default: all, as tests inspect them). A
   * long-running stand-in (the CLI, benchmarks) must bound it: each record holds the request body.
   */
  maxRecordedRequests?: number;
  /**
   * `chars` (default): one id per code point, the twin's prefix-stable template, the fast mode every existing test
   * uses. `qwen3`: the real Qwen3 tokenizer and chat template, the qwen3 reasoning parser and the hermes tool parser.
   */
  tokenizer?: TokenizerName;
  /** vLLM --logprobs-mode: `raw` (raw_logprobs, vLLM's default) or `processed` (processed_logprobs). */
  logprobsMode?: LogprobsMode;
  /** qwen3 mode: think before answering (a `<think>` block) unless the request sets enable_thinking=false. */
  reasoning?: boolean;
  /** qwen3 mode: vLLM --reasoning-parser (default qwen3); null turns reasoning parsing off. */
  reasoningParser?: ReasoningParserName | null;
  /** Where parsed reasoning goes: `reasoning` (current vLLM, default), `reasoning_content` (older) or both. */
  reasoningField?: ReasoningField;
  /** vLLM --enable-prompt-tokens-details: report usage.prompt_tokens_details.cached_tokens (default false). */
  enablePromptTokensDetails?: boolean;
  /** Pace non-stream generations like streams (ttftMs, then interTokenMs per token) so they can be paused. */
  paceNonStream?: boolean;
  /** Prefix-cache block size in tokens (vLLM default 16). */
  blockSize?: number;
  /**
   * Most prefix-cache blocks kept, oldest dropped first (default: unbounded). A real engine's KV pool is finite; a
   * long-running stand-in (benchmarks) must bound it, since every new prompt adds blocks.
   */
  maxCachedBlocks?: number;
  /**
   * What token_ids hold when a stop string ends a generation: `vllm` keeps the tokens that formed the stop string
   * (default in qwen3 mode), `cut` drops them (the stand-in's historical behaviour, default in chars mode).
   */
  stopStringIds?: 'vllm' | 'cut';
  /** The engine dialect: 'vllm' (default) or 'sglang' (docs/engine-twin.md, "SGLang dialect"). */
  dialect?: TwinDialect;
  /**
   * A MoE model's routed experts on every non-stream chat and completions answer (vLLM: as if started with
   * --enable-return-routed-experts; SGLang: when the request asks with return_routed_experts). routed-experts.ts.
   */
  routedExperts?: TwinRoutedExperts;
  /**
   * Serve GET /metrics in the engine's Prometheus text format (default true; vLLM always serves it, SGLang only with
   * --enable-metrics). false: /metrics answers 404, as SGLang without that flag or an OpenAI-style server does.
   */
  metrics?: boolean;
}

export interface MockVllm {
  /** Base URL ending in /v1, for the openai SDK's baseURL. */
  url: string;
  /** Origin without /v1 (for /health and the dev routes). */
  baseUrl: string;
  port: number;
  model: string;
  requests: MockRequestRecord[];
  /** Ground truth of every generation (also GET /_twin/ledger). */
  ledger: Ledger;
  setFault(fault: MockFault | MockFault[] | string, options?: SetFaultOptions): void;
  clearFaults(): void;
  /** Resolves with the first record (past or future) for which predicate holds; rejects after timeoutMs. */
  waitFor(predicate: (r: MockRequestRecord) => boolean, timeoutMs?: number): Promise<MockRequestRecord>;
  close(): Promise<void>;
}
