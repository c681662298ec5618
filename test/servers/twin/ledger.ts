// Ground truth for tests: one entry per generated sequence (one choice of one prompt), with everything the
// "model" really did, whatever the wire showed: all generated ids (stop-string tokens and ids a legacy stream
// dropped included), both logprob flavours, the weights behind each token, and whether stale KV was reused.
import type { TwinWeights } from './types.js';

export type LedgerEndpoint = 'chat' | 'completions' | 'responses' | 'generate';

export interface LedgerEntry {
  /** Increasing per twin. */
  seq: number;
  /** The response id the client saw: `chatcmpl-...`, `cmpl-...`, `resp_...`, or the generate request_id. */
  responseId: string;
  /** The caller's request id (body `request_id` or `x-request-id`), if any. */
  requestId: string | null;
  endpoint: LedgerEndpoint;
  model: string;
  choiceIndex: number;
  promptIndex: number;
  promptIds: number[];
  cacheSalt: string | null;
  /** Prompt tokens served from the prefix cache. */
  cachedTokens: number;
  /** True when reused cache blocks were computed under other weights than the request's current ones. */
  staleKv: boolean;
  /** The oldest weights among the reused blocks (what computed the output) when staleKv. */
  kvWeights: TwinWeights | null;
  /** Every generated token, including the EOS/stop token and tokens the stream did not show. */
  tokenIds: number[];
  /** Per token: the logprob under the untransformed logits (raw) and under the sampling distribution (processed). */
  logprobs: { raw: number[]; processed: number[] };
  /** Per token: the weights that computed it. */
  weights: TwinWeights[];
  /** The generated text as decoded (before stop-string truncation and parsing). */
  text: string;
  finishReason: 'stop' | 'length' | 'abort' | null;
  stopReason: string | number | null;
  stream: boolean;
  /** Stream: the ids the chunks actually carried (differs from tokenIds under faults like legacy-tool-stream). */
  streamedTokenIds: number[];
  status: 'running' | 'finished' | 'aborted';
  /** Set when the client went away before the generation finished. */
  clientDisconnected: boolean;
  startedAt: number;
  finishedAt?: number;
  /** The routed experts the answer carried, row-major (prompt + generated - 1, layers, top_k); absent when none. */
  routedExperts?: number[];
}

export class Ledger {
  readonly entries: LedgerEntry[] = [];
  private nextSeq = 1;

  constructor(private readonly maxEntries = Number.POSITIVE_INFINITY) {}

  /** Adds a running entry; the generation fills it in as it goes. */
  open(entry: Omit<LedgerEntry, 'seq'>): LedgerEntry {
    const full: LedgerEntry = { seq: this.nextSeq++, ...entry };
    this.entries.push(full);
    // Trim in halves so the cost stays amortised O(1) per entry.
    if (this.entries.length > this.maxEntries * 2) this.entries.splice(0, this.entries.length - this.maxEntries);
    return full;
  }

  /** The entries (one per choice) of the response with this id. */
  byResponseId(responseId: string): LedgerEntry[] {
    return this.entries.filter((e) => e.responseId === responseId);
  }

  byRequestId(requestId: string): LedgerEntry[] {
    return this.entries.filter((e) => e.requestId === requestId);
  }

  last(): LedgerEntry | undefined {
    return this.entries.at(-1);
  }

  clear(): void {
    this.entries.length = 0;
  }
}
