// R3 routed-experts cost (`npx tsx bench/r3-routes.ts [layers] [topK] [experts]`): for a linear agent rollout on a
// MoE (default Qwen3-30B-A3B: 48 layers, top-8 of 128 experts, so vLLM sends uint8), the CPU per call to read the
// routes from vLLM's answer and make the stored attributes, the extra JSON.parse cost of an answer that carries them,
// and the stored bytes per token with the span codec (each call stored against the previous one, as the store does).
// Routes are a function of token position and id, so each turn repeats the earlier turn's routes, as a prefix-cached
// engine does (docs/training-data.md#routed-experts).
import type { CanonicalRecord } from '../src/contracts/call-record.js';
import { CallCapture } from '../src/gateway/capture/call-capture.js';
import { canonicalRecord } from '../src/gateway/capture/canonical.js';
import { encodeNpyBase64 } from '../src/gateway/capture/routed-experts.js';
import { routedExpertsAttributes } from '../src/gateway/capture/routed-experts-record.js';
import { type SpanBase, SpanEncoder } from '../src/store/codec/span-codec.js';
import type { Attributes, Span } from '../src/store/core/types.js';
import { benchSpan } from './store.js';

const LAYERS = Number(process.argv[2] ?? 48);
const TOP_K = Number(process.argv[3] ?? 8);
const EXPERTS = Number(process.argv[4] ?? 128);
const TURNS = 8;
const FIRST_PROMPT = 1500;
const RESPONSE = 300;
const TOOL_OUTPUT = 500;
const ROUNDS = 5;

function routesOf(tokens: readonly number[]): Int32Array {
  const rows = tokens.length - 1;
  const out = new Int32Array(rows * LAYERS * TOP_K);
  let i = 0;
  for (let t = 0; t < rows; t++)
    for (let l = 0; l < LAYERS; l++) {
      // Distinct experts from a hash of (position, token, layer): as little repetition as real routing has.
      let h = Math.imul((tokens[t] ?? 0) ^ Math.imul(t, 0x9e3779b1) ^ Math.imul(l, 0x85ebca6b), 0xc2b2ae35) >>> 0;
      const chosen = new Set<number>();
      for (let c = 1; chosen.size < TOP_K; c++) {
        h = Math.imul(h ^ (h >>> 15) ^ c, 0x2c1b3c6d) >>> 0;
        chosen.add(h % EXPERTS);
      }
      for (const e of chosen) out[i++] = e;
    }
  return out;
}

interface Turn {
  readonly prompt: number[];
  readonly response: number[];
  readonly body: string;
  readonly bodyWithout: string;
}

const turns: Turn[] = [];
let history = Array.from({ length: FIRST_PROMPT }, (_, i) => (i * 7919) % 151_000);
for (let turn = 0; turn < TURNS; turn++) {
  const prompt = history;
  const response = Array.from({ length: RESPONSE }, (_, i) => (i * 104_729 + turn * 31) % 151_000);
  const tokens = [...prompt, ...response];
  const routes = routesOf(tokens);
  const npy = encodeNpyBase64({ rows: tokens.length - 1, layers: LAYERS, topK: TOP_K, values: routes }, 'uint8');
  const base = {
    id: `chatcmpl-${turn}`,
    object: 'chat.completion',
    model: 'moe',
    prompt_token_ids: prompt,
    usage: { prompt_tokens: prompt.length, completion_tokens: response.length },
  };
  const choice = { index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop', token_ids: response };
  turns.push({
    prompt,
    response,
    body: JSON.stringify({ ...base, choices: [{ ...choice, routed_experts: npy }] }),
    bodyWithout: JSON.stringify({ ...base, choices: [{ ...choice, routed_experts: null }] }),
  });
  history = [...tokens, ...Array.from({ length: TOOL_OUTPUT }, (_, i) => (i * 65_537 + turn) % 151_000)];
}

function cpu(fn: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    best = Math.min(best, used.user + used.system);
  }
  return best;
}

function captured(text: string): { capture: CallCapture; record: CanonicalRecord } {
  const capture = new CallCapture('chat');
  capture.setResponse(JSON.parse(text));
  return { capture, record: canonicalRecord(capture.result(), { complete: true, unavailable: null }) };
}

const parseWith = cpu(() => {
  for (const t of turns) JSON.parse(t.body);
});
const parseWithout = cpu(() => {
  for (const t of turns) JSON.parse(t.bodyWithout);
});
const prepared = turns.map((t) => captured(t.body));
const store = cpu(() => {
  for (const { capture, record } of prepared) routedExpertsAttributes(capture.routes, record);
});

function spans(withRoutes: boolean): Span[] {
  return turns.map((t, i) => {
    const attributes: Attributes = { prompt_token_ids: t.prompt, response_token_ids: t.response };
    const prepare = prepared[i];
    if (withRoutes && prepare !== undefined)
      Object.assign(attributes, routedExpertsAttributes(prepare.capture.routes, prepare.record));
    return { ...benchSpan({ rolloutId: 'ro', attemptId: 'at', attributes }), sequence_id: i + 1 } as Span;
  });
}

function storedBytes(chain: Span[]): number[] {
  const encoder = new SpanEncoder();
  let base: SpanBase | null = null;
  const sizes: number[] = [];
  for (const span of chain) {
    const result = encoder.encode(span, { base, shared: null });
    sizes.push(result.blob.length);
    base = result.self;
  }
  return sizes;
}

const chainWith = spans(true);
const chainWithout = spans(false);
const withRoutes = storedBytes(chainWith);
const without = storedBytes(chainWithout);
const encodeWith = cpu(() => storedBytes(chainWith));
const encodeWithout = cpu(() => storedBytes(chainWithout));
const last = turns.at(-1);
const rowTokens = last === undefined ? 0 : last.prompt.length + last.response.length;
const routeBytes = withRoutes.reduce((a, b) => a + b, 0) - without.reduce((a, b) => a + b, 0);
const wireBytes = turns.reduce((a, t) => a + t.body.length - t.bodyWithout.length, 0);
const perCall = (micros: number) => (micros / TURNS / 1000).toFixed(2);
console.log(
  `MoE ${LAYERS} layers x top-${TOP_K} of ${EXPERTS} experts; ${TURNS} turns, final row ${rowTokens} tokens ` +
    `(raw routes of the row: ${((rowTokens - 1) * LAYERS * TOP_K).toLocaleString()} B at uint8)`,
);
console.log(`  on the wire (base64 .npy, every call):    ${wireBytes.toLocaleString()} B`);
console.log(
  `  stored (span codec, against the previous): ${routeBytes.toLocaleString()} B = ${(routeBytes / rowTokens).toFixed(1)} B per row token ` +
    `(per call: ${withRoutes.map((b, i) => b - (without[i] ?? 0)).join(', ')})`,
);
console.log(
  `  CPU per call: JSON.parse +${perCall(parseWith - parseWithout)} ms for the routes; capture to stored attributes ${perCall(store)} ms ` +
    `; span codec +${perCall(encodeWith - encodeWithout)} ms (mean call ${Math.round(turns.reduce((a, t) => a + t.prompt.length + t.response.length, 0) / TURNS)} tokens)`,
);
