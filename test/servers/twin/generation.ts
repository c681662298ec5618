// One generated sequence (one choice of one prompt), advanced token by token. The token at step s is token s of
// the answer the "model" gives under the weights computing that step, so a generation that spans a weight swap
// (a keep-mode pause) continues under the new weights. Stop handling follows vLLM's detokenizer: EOS and
// stop_token_ids end the sequence (kept in the ids, never in the text); a stop string cuts the text and, by
// default, keeps the tokens that formed it in the ids; text that could start a stop string is held back from
// stream deltas until it is known not to.
import { type SamplingSettings, type StepDistribution, sampleStep } from './sampler.js';
import { IncrementalDecoder, type TwinTokenizer } from './tokenizer.js';
import type { TwinWeights } from './types.js';
import { fnv1a, hashInts, mix } from './util.js';

export type FinishReason = 'stop' | 'length' | 'abort';

export interface SequenceConfig {
  tokenizer: TwinTokenizer;
  promptIds: readonly number[];
  choiceIndex: number;
  maxTokens: number;
  stop: readonly string[];
  stopTokenIds: readonly number[];
  includeStopStrInOutput: boolean;
  /** `cut`: the tokens of a stop string are not generated at all (the stand-in's historical behaviour). */
  stopStringIds: 'vllm' | 'cut';
  sampling: SamplingSettings;
  /** The request's `seed`, if any. */
  seed: number;
  /** The answer's ids (ending with EOS) under given weights. */
  plan: (weights: TwinWeights) => readonly number[];
}

export interface StepResult {
  ids: number[];
  /** Newly final text for a stream delta. */
  text: string;
}

export class Sequence {
  readonly ids: number[] = [];
  readonly weights: TwinWeights[] = [];
  readonly distributions: StepDistribution[] = [];
  finishReason: FinishReason | null = null;
  stopReason: string | number | null = null;
  private readonly decoder: IncrementalDecoder;
  private fullText = '';
  private emitted = 0;
  private readonly holdBack: number;
  private readonly promptHash: number;

  constructor(private readonly config: SequenceConfig) {
    this.decoder = new IncrementalDecoder(config.tokenizer);
    this.holdBack = config.stop.length > 0 ? Math.max(...config.stop.map((s) => s.length)) - 1 : 0;
    this.promptHash = hashInts(config.promptIds);
  }

  get done(): boolean {
    return this.finishReason !== null;
  }

  /** The output text (truncated at a stop string). */
  get text(): string {
    return this.fullText;
  }

  /** All text the decoder produced, ignoring stop-string truncation. */
  get decodedText(): string {
    return this.decoder.text;
  }

  abort(): StepResult {
    if (!this.done) this.finishReason = 'abort';
    return { ids: [], text: this.flush() };
  }

  step(weights: TwinWeights): StepResult {
    if (this.done) return { ids: [], text: '' };
    const { config } = this;
    const s = this.ids.length;
    const plan = config.plan(weights);
    if (config.stopStringIds === 'cut' && this.cutHere(plan)) return { ids: [], text: this.flush() };
    const token = plan[s] ?? config.tokenizer.eosId;
    const seed = mix(mix(this.promptHash, config.choiceIndex), mix(fnv1a(weights.key), s)) ^ config.seed;
    this.distributions.push(
      sampleStep({ seed, sampledId: token, settings: config.sampling, tokenizer: config.tokenizer }),
    );
    this.ids.push(token);
    this.weights.push(weights);

    if (token === config.tokenizer.eosId) {
      this.finishReason = 'stop';
    } else if (config.stopTokenIds.includes(token)) {
      this.finishReason = 'stop';
      this.stopReason = token;
    } else {
      const added = this.decoder.push(token);
      this.fullText += added;
      if (added && config.stop.length > 0) this.checkStopStrings(added.length);
    }
    if (!this.done && this.ids.length >= config.maxTokens) this.finishReason = 'length';
    return { ids: [token], text: this.done ? this.flush() : this.release() };
  }

  private checkStopStrings(added: number): void {
    for (const stop of this.config.stop) {
      if (!stop) continue;
      const at = this.fullText.indexOf(stop, Math.max(0, this.fullText.length - added - stop.length + 1));
      if (at < 0) continue;
      this.fullText = this.fullText.slice(0, this.config.includeStopStrInOutput ? at + stop.length : at);
      this.finishReason = 'stop';
      this.stopReason = stop;
      return;
    }
  }

  /** `cut` mode: would the next token belong to (or follow) a stop string the planned answer completes? */
  private cutHere(plan: readonly number[]): boolean {
    const { config } = this;
    if (config.stop.length === 0) return false;
    const rest = plan.slice(this.ids.length, config.maxTokens).filter((id) => id !== config.tokenizer.eosId);
    const prospective = this.fullText + config.tokenizer.decode(rest, { skipSpecial: true });
    let best: { at: number; end: number; stop: string } | undefined;
    for (const stop of config.stop) {
      if (!stop) continue;
      const at = prospective.indexOf(stop);
      if (at >= 0 && (!best || at + stop.length < best.end)) best = { at, end: at + stop.length, stop };
    }
    if (!best || this.fullText.length < best.at) return false;
    this.fullText = this.fullText.slice(0, config.includeStopStrInOutput ? best.end : best.at);
    this.finishReason = 'stop';
    this.stopReason = best.stop;
    return true;
  }

  private release(): string {
    const until = this.fullText.length - this.holdBack;
    if (until <= this.emitted) return '';
    const out = this.fullText.slice(this.emitted, until);
    this.emitted = until;
    return out;
  }

  private flush(): string {
    const out = this.fullText.slice(this.emitted);
    this.emitted = this.fullText.length;
    return out;
  }
}
