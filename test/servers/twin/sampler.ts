// The twin's sampler: a deterministic per-step distribution around the token the "model" emits, with vLLM's
// sampling transforms, so raw and processed logprobs differ the way they do on a real server.
//
// Each step has K ranked candidates (the emitted token is one of them) plus a tail standing for the rest of the
// vocabulary. Raw logprobs come from the untransformed logits (vLLM's default --logprobs-mode raw_logprobs: before
// temperature, min_p, top-k and top-p); processed logprobs from the distribution actually sampled from
// (processed_logprobs). The emitted token's rank is drawn from the processed distribution, so it is always a token
// the sampler could have picked. With greedy sampling (temperature ~0) vLLM reports the raw values in both modes.
import { createRng } from '../../../src/algorithms/rng.js';
import type { TwinTokenizer } from './tokenizer.js';
import { mix } from './util.js';

export interface SamplingSettings {
  temperature: number;
  topP: number;
  /** -1 or 0 = off. */
  topK: number;
  minP: number;
}

export const DEFAULT_SAMPLING: SamplingSettings = { temperature: 1, topP: 1, topK: -1, minP: 0 };

export interface Candidate {
  id: number;
  raw: number;
  /** -Infinity for a token the sampling transforms removed. */
  processed: number;
}

export interface StepDistribution {
  /** The emitted token. */
  sampled: Candidate;
  /** Candidates by rank, best first (the emitted one included at its rank). */
  ranked: Candidate[];
}

const CANDIDATES = 21;
// vLLM's _SAMPLING_EPS: a temperature below it means greedy.
const GREEDY_EPS = 1e-5;

function logSumExp(values: readonly number[]): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  if (max === Number.NEGATIVE_INFINITY) return max;
  let sum = 0;
  for (const v of values) sum += Math.exp(v - max);
  return max + Math.log(sum);
}

/** The step distribution for emitting `sampledId`, seeded by (prompt, choice, weights, step). */
export function sampleStep(options: {
  seed: number;
  sampledId: number;
  settings: SamplingSettings;
  tokenizer: TwinTokenizer;
}): StepDistribution {
  const { seed, sampledId, settings, tokenizer } = options;
  const rng = createRng(seed);
  const logits: number[] = [0];
  for (let i = 1; i < CANDIDATES; i++) logits.push(logits[i - 1]! - (0.05 + rng.next() * 1.2));
  const tailCount = Math.max(1, tokenizer.vocabSize - CANDIDATES);
  // log of the tail's total mass at temperature 1: comparable to the last candidates, never dominant.
  const tailTotal = logits[CANDIDATES - 1]! - 0.5 - rng.next() * 2;
  const tailEach = tailTotal - Math.log(tailCount);
  const lseRaw = logSumExp([...logits, tailTotal]);
  const raw = logits.map((l) => l - lseRaw);

  const greedy = settings.temperature < GREEDY_EPS;
  const topK = settings.topK > 0 ? settings.topK : Number.POSITIVE_INFINITY;
  const unfiltered = settings.topP >= 1 && topK >= CANDIDATES + tailCount && settings.minP <= 0;
  let processed: number[];
  if (greedy || (settings.temperature === 1 && unfiltered)) {
    processed = raw;
  } else {
    processed = transform({ logits, tailEach, tailCount, settings, topK });
  }

  let rank = 0;
  if (!greedy) {
    const u = rng.next();
    let cum = 0;
    rank = -1;
    for (let i = 0; i < CANDIDATES; i++) {
      const p = Math.exp(processed[i]!);
      if (p === 0) break;
      cum += p;
      rank = i;
      if (u < cum) break;
    }
    rank = Math.max(0, rank);
  }

  const used = new Set<number>([sampledId]);
  const ranked: Candidate[] = [];
  for (let i = 0; i < CANDIDATES; i++) {
    let id = sampledId;
    if (i !== rank) {
      let salt = i + 1;
      do {
        id = tokenizer.alternative(mix(seed, salt));
        salt += CANDIDATES;
      } while (used.has(id));
      used.add(id);
    }
    // Engines compute logprobs in float32 on the GPU and serialise those values, so every logprob on the wire is a
    // float32 number (vLLM's log_softmax(dtype=float32), SGLang's float32 logits); the sampling above keeps doubles.
    ranked.push({ id, raw: Math.fround(raw[i]!), processed: Math.fround(processed[i]!) });
  }
  return { sampled: ranked[rank]!, ranked };
}

/** Temperature, then min_p, then top-k, then top-p (vLLM V1's order); the logprobs of what survives. */
function transform(options: {
  logits: readonly number[];
  tailEach: number;
  tailCount: number;
  settings: SamplingSettings;
  topK: number;
}): number[] {
  const { logits, tailEach, tailCount, settings, topK } = options;
  const t = settings.temperature;
  const scaled = logits.map((l) => l / t);
  const tailScaled = tailEach / t;
  let keep = scaled.map(() => true);
  let tailKept = tailCount;

  const probsOf = (): { p: number[]; tail: number } => {
    const parts = scaled.filter((_, i) => keep[i]);
    if (tailKept > 0) parts.push(tailScaled + Math.log(tailKept));
    const z = logSumExp(parts);
    return {
      p: scaled.map((s, i) => (keep[i] ? Math.exp(s - z) : 0)),
      tail: tailKept > 0 ? Math.exp(tailScaled - z) : 0,
    };
  };

  if (settings.minP > 0) {
    const { p } = probsOf();
    const floor = settings.minP * p[0]!;
    keep = keep.map((k, i) => k && p[i]! >= floor);
    if (probsOf().tail < floor) tailKept = 0;
  }
  if (Number.isFinite(topK)) {
    let kept = 0;
    keep = keep.map((k) => {
      if (!k) return false;
      kept++;
      return kept <= topK;
    });
    tailKept = Math.max(0, Math.min(tailKept, topK - kept));
  }
  if (settings.topP < 1) {
    // vLLM masks, in ascending order of probability, every token whose cumulative mass is <= 1 - top_p.
    const { p, tail } = probsOf();
    let budget = 1 - settings.topP;
    if (tail > 0) {
      const dropped = Math.min(tailKept, Math.floor(budget / tail));
      budget -= dropped * tail;
      tailKept -= dropped;
    }
    if (tailKept === 0) {
      for (let i = scaled.length - 1; i > 0; i--) {
        if (!keep[i]) continue;
        if (p[i]! <= budget) {
          budget -= p[i]!;
          keep[i] = false;
        } else break;
      }
    }
  }
  keep[0] = true;
  const parts = scaled.filter((_, i) => keep[i]);
  if (tailKept > 0) parts.push(tailScaled + Math.log(tailKept));
  const z = logSumExp(parts);
  return scaled.map((s, i) => (keep[i] ? s - z : Number.NEGATIVE_INFINITY));
}

/** The sampling settings of a request body (chat, completions, or /inference/v1/generate's sampling_params). */
export function samplingSettings(body: Record<string, unknown>, defaults: SamplingSettings): SamplingSettings {
  const num = (key: string, fallback: number): number => {
    const v = body[key];
    return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
  };
  return {
    temperature: num('temperature', defaults.temperature),
    topP: num('top_p', defaults.topP),
    topK: num('top_k', defaults.topK),
    minP: num('min_p', defaults.minP),
  };
}
