// What every route handler shares: the resolved options, the tokenizer/template pair, the engine and the ledger.
import type { ChatTemplate } from './chat-template.js';
import type { Engine } from './engine.js';
import type { Exchange } from './exchange.js';
import type { Ledger } from './ledger.js';
import type { TwinRoutedExperts } from './routed-experts.js';
import type { SamplingSettings } from './sampler.js';
import type { TwinTokenizer } from './tokenizer.js';
import type { LogprobsMode, MockRespond, ReasoningField, ReasoningParserName, TwinDialect } from './types.js';

export interface ResolvedOptions {
  model: string;
  served: ReadonlySet<string>;
  anyModel: boolean;
  maxModelLen: number;
  tokensPerChunk: number;
  latencyMs: number;
  ttftMs: number;
  interTokenMs: number;
  maxTokens: number | undefined;
  floorLogprobEvery: number;
  returnTokensAsTokenIds: boolean;
  logprobsMode: LogprobsMode;
  reasoning: boolean;
  reasoningParser: ReasoningParserName | null;
  reasoningField: ReasoningField;
  enablePromptTokensDetails: boolean;
  paceNonStream: boolean;
  stopStringIds: 'vllm' | 'cut';
  randomOrder: { maxDelayMs: number } | undefined;
  defaultSampling: SamplingSettings;
  dialect: TwinDialect;
  metrics: boolean;
  routedExperts: TwinRoutedExperts | null;
}

export interface TwinContext {
  options: ResolvedOptions;
  tokenizer: TwinTokenizer;
  template: ChatTemplate;
  respond: MockRespond;
  engine: Engine;
  ledger: Ledger;
  /** Seeded [0, 1) for randomOrder delays. */
  random: () => number;
}

/** A generation or token route's input: the exchange and its JSON object body. */
export interface RouteRequest {
  ex: Exchange;
  body: Record<string, unknown>;
}
