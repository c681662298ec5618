// The life of one generation request: admission (waiting while the engine is paused or asleep), prefix-cache
// lookup, stepping its choices under the weights of the moment, ledger bookkeeping, and release.
import type { TwinContext } from './context.js';
import { ActiveRequest } from './engine.js';
import type { Exchange, SseWriter } from './exchange.js';
import { type FinishReason, Sequence, type SequenceConfig } from './generation.js';
import type { LedgerEndpoint, LedgerEntry } from './ledger.js';
import type { TwinWeights } from './types.js';

export interface JobChoice {
  /** The wire index (completions: output.index + prompt_idx * n). */
  index: number;
  promptIndex: number;
  promptIds: number[];
  seq: Sequence;
  entry: LedgerEntry;
  /** The weights of reused stale KV, which then compute this choice's tokens. */
  stale: TwinWeights | null;
  /** The weights that computed the prompt (for caching its blocks). */
  prefillWeights: TwinWeights;
  /** Set when a retracted choice was prefilled again: the weights of the KV of its first `upTo` tokens. */
  recomputed?: { readonly upTo: number; readonly weights: TwinWeights };
}

export interface PromptAdmission {
  cachedTokens: number;
  stale: TwinWeights | null;
  prefillWeights: TwinWeights;
}

export interface JobMeta {
  responseId: string;
  requestId: string | null;
  endpoint: LedgerEndpoint;
  model: string;
  /** The LoRA adapter the request names, or null for the base model. */
  lora: string | null;
  cacheSalt: string | null;
  stream: boolean;
}

export class Job {
  readonly active: ActiveRequest;
  readonly choices: JobChoice[] = [];
  private released = false;

  private readonly ex: Exchange;
  readonly meta: JobMeta;

  constructor(
    private readonly ctx: TwinContext,
    options: JobMeta & { ex: Exchange },
  ) {
    const { ex, ...meta } = options;
    this.ex = ex;
    this.meta = meta;
    const ids = new Set([meta.responseId]);
    if (meta.requestId !== null) ids.add(meta.requestId);
    this.active = new ActiveRequest(ids);
    ex.record.responseId = meta.responseId;
    ex.notify();
    ex.res.on('close', () => {
      if (this.released) return;
      // The client left (or the handler failed and answered an error): the scheduler slot must not leak.
      if (!ex.res.writableFinished) for (const c of this.choices) if (!c.seq.done) c.entry.clientDisconnected = true;
      this.active.abort();
      this.release();
    });
  }

  private get loraId(): number {
    return this.meta.lora === null ? 0 : (this.ctx.engine.adapters.get(this.meta.lora)?.id ?? 0);
  }

  /** Waits while the engine is paused or asleep; a queued stream has already had its headers (as vLLM sends them). */
  async admit(writer?: SseWriter): Promise<void> {
    if (writer && !this.ctx.engine.admitting) writer.start();
    await this.ctx.engine.admit(this.active);
  }

  /** Prefix-cache lookup for one prompt, and its blocks cached as computed now. */
  admitPrompt(promptIds: readonly number[]): PromptAdmission {
    const current = this.ctx.engine.weightsFor(this.meta.lora);
    const lookup = this.ctx.engine.lookupPrefix({
      ids: promptIds,
      loraId: this.loraId,
      salt: this.meta.cacheSalt,
      current,
    });
    this.ctx.engine.storePrefix({
      ids: promptIds,
      loraId: this.loraId,
      salt: this.meta.cacheSalt,
      weightsAt: () => current,
    });
    return {
      cachedTokens: lookup.cachedTokens,
      stale: lookup.staleWeights,
      prefillWeights: lookup.staleWeights ?? current,
    };
  }

  addChoice(options: {
    index: number;
    promptIndex: number;
    choiceIndex: number;
    promptIds: number[];
    admission: PromptAdmission;
    config: Omit<SequenceConfig, 'promptIds' | 'choiceIndex' | 'tokenizer'>;
  }): JobChoice {
    const { admission } = options;
    const seq = new Sequence({
      ...options.config,
      promptIds: options.promptIds,
      choiceIndex: options.choiceIndex,
      tokenizer: this.ctx.tokenizer,
    });
    const entry = this.ctx.ledger.open({
      responseId: this.meta.responseId,
      requestId: this.meta.requestId,
      endpoint: this.meta.endpoint,
      model: this.meta.model,
      choiceIndex: options.choiceIndex,
      promptIndex: options.promptIndex,
      promptIds: options.promptIds,
      cacheSalt: this.meta.cacheSalt,
      cachedTokens: admission.cachedTokens,
      staleKv: admission.stale !== null,
      kvWeights: admission.stale,
      tokenIds: seq.ids,
      logprobs: { raw: [], processed: [] },
      weights: seq.weights,
      text: '',
      finishReason: null,
      stopReason: null,
      stream: this.meta.stream,
      streamedTokenIds: [],
      status: 'running',
      clientDisconnected: false,
      startedAt: Date.now(),
    });
    const choice: JobChoice = {
      index: options.index,
      promptIndex: options.promptIndex,
      promptIds: options.promptIds,
      seq,
      entry,
      stale: admission.stale,
      prefillWeights: admission.prefillWeights,
    };
    this.choices.push(choice);
    return choice;
  }

  /**
   * After the engine's gate: a request retracted meanwhile (SGLang `retract`) is prefilled again, so its KV (prompt
   * and tokens so far) is now the current weights', stale reuse included.
   */
  recomputeIfRetracted(): void {
    if (!this.active.retracted) return;
    this.active.retracted = false;
    const weights = this.ctx.engine.weightsFor(this.meta.lora);
    for (const c of this.choices) {
      c.stale = null;
      c.recomputed = { upTo: c.promptIds.length + c.seq.ids.length, weights };
    }
  }

  /** The weights computing this choice's next token. */
  weightsNow(choice: JobChoice): TwinWeights {
    return choice.stale ?? this.ctx.engine.weightsFor(this.meta.lora);
  }

  /** Up to `tokens` steps of one choice; the ids and text they produced. */
  advance(choice: JobChoice, tokens: number): { ids: number[]; text: string; start: number } {
    const start = choice.seq.ids.length;
    const ids: number[] = [];
    let text = '';
    while (ids.length < tokens && !choice.seq.done) {
      const r = choice.seq.step(this.weightsNow(choice));
      ids.push(...r.ids);
      text += r.text;
      const dist = choice.seq.distributions.at(-1);
      if (r.ids.length > 0 && dist) {
        choice.entry.logprobs.raw.push(dist.sampled.raw);
        choice.entry.logprobs.processed.push(dist.sampled.processed);
      }
    }
    choice.entry.text = choice.seq.decodedText;
    if (ids.length > 0) {
      if (start === 0) this.ctx.engine.countPrefill(choice.promptIds.length);
      this.ctx.engine.countGenerated(ids.length);
      this.ex.record.tokensGenerated += ids.length;
      this.ex.notify();
    }
    return { ids, text, start };
  }

  /** Runs every choice to its end without pauses (a non-paced non-stream answer). */
  runToEnd(): void {
    for (const c of this.choices) while (!c.seq.done && !this.active.aborted) this.advance(c, Number.POSITIVE_INFINITY);
  }

  /** Aborts the unfinished choices: they end with finish_reason "abort" and what they had generated. */
  abortRemaining(): { choice: JobChoice; text: string }[] {
    const out: { choice: JobChoice; text: string }[] = [];
    for (const c of this.choices) if (!c.seq.done) out.push({ choice: c, text: c.seq.abort().text });
    return out;
  }

  get aborted(): boolean {
    return this.active.aborted;
  }

  /** Ends the job: ledger entries closed, generated blocks cached, the scheduler slot freed. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    // Whatever stopped it (abort, a client that left, a fault that ended the stream), an unfinished choice aborted.
    this.abortRemaining();
    for (const c of this.choices) {
      const reason: FinishReason | null = c.seq.finishReason;
      c.entry.finishReason = reason;
      c.entry.stopReason = c.seq.stopReason;
      c.entry.status = reason === 'abort' ? 'aborted' : 'finished';
      c.entry.finishedAt = Date.now();
      c.entry.text = c.seq.decodedText;
      const all = [...c.promptIds, ...c.seq.ids];
      const promptLen = c.promptIds.length;
      this.ctx.engine.storePrefix({
        ids: all,
        loraId: this.loraId,
        salt: this.meta.cacheSalt,
        weightsAt: (i) => {
          if (c.recomputed !== undefined && i < c.recomputed.upTo) return c.recomputed.weights;
          return i < promptLen ? c.prefillWeights : (c.seq.weights[i - promptLen] ?? c.prefillWeights);
        },
      });
    }
    this.ctx.engine.finish(this.active);
  }
}
