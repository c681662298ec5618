// The data audit's one verifier. Every training sample rollgate emits (an RL batch row, an export row, a triplet)
// is checked token by token against the engine twin's ledger, the ground truth of every generation: the ids the
// engine really generated, the logprobs it really reported, the weights that really computed each token. Every
// recorded call is also classified from the ledger (aborted, ids lost on the wire, a placeholder logprob, clean),
// and each reader must have left it out, kept it or counted it accordingly.
//
// The verifier reads only facts the gateway cannot get wrong in its favour: a span's response id (to find the
// ledger entry), its sequence id, its model version and declared logprobs mode, and the ids and logprobs the wire
// carried (to say what a reader could know). It never calls the adapters it audits.
import type { BatchSample } from '../../src/algorithms/rl/batch.js';
import * as A from '../../src/contracts/span-attributes.js';
import type { Span } from '../../src/store/core/types.js';
import type { Ledger, LedgerEntry, TwinWeights } from '../servers/mock-vllm.js';

/**
 * What a sample's logprobs must be: `behaviour` = the sampling distribution's (RL batches: an importance ratio
 * needs them), `declared` = what the engine reported in the mode the pool declares (exports, triplets).
 */
export type LogprobsMeaning = 'behaviour' | 'declared';

/** One emitted training sample, whatever reader produced it. */
export interface AuditSample {
  /** Which reader, for messages: `batch`, `export:trajectory`, `triplet`, ... */
  readonly source: string;
  readonly rolloutId: string;
  readonly promptIds: readonly number[];
  readonly responseIds: readonly number[];
  readonly responseMask: readonly number[];
  readonly logprobs: readonly number[] | null;
  /** Null where the reader states none (triplets). */
  readonly modelVersion: number | null;
  readonly sequenceIds: readonly number[];
  readonly logprobsMeaning: LogprobsMeaning;
}

/** An RL batch row as a sample: its logprobs must be the behaviour policy's (an importance ratio needs them). */
export function batchAuditSample(s: BatchSample): AuditSample {
  return {
    source: 'batch',
    rolloutId: s.rollout_id,
    promptIds: s.prompt_ids,
    responseIds: s.response_ids,
    responseMask: s.response_mask,
    logprobs: s.logprobs,
    modelVersion: s.model_version,
    sequenceIds: s.sequence_ids,
    logprobsMeaning: 'behaviour',
  };
}

/** Why a reader left a call out (or kept it without logprobs), as the readers name it. */
export type DropReason =
  | 'aborted'
  | 'incomplete_token_ids'
  | 'token_count_mismatch'
  | 'logprobs_floor'
  | 'version_changed_in_flight';

export interface ReportedDrop {
  readonly rolloutId: string;
  readonly sequenceId: number;
  readonly reason: string;
}

/** What the ledger says must happen to a recorded call. */
export type Expected = 'train' | 'error' | DropReason;

export interface CallTruth {
  readonly span: Span;
  readonly entry: LedgerEntry | null;
  readonly expected: Expected;
  /** An aborted call the agent sent again (same attempt, same prompt): left out silently, nothing built on it. */
  readonly superseded: boolean;
  /** The wire carried every prompt and response id the engine had (what rollgate_token_ids_incomplete_total counts). */
  readonly idsOnWire: boolean;
}

/** Everything the verifier reads: the ledgers of all twins, the spans of the audited rollouts, the weights map. */
export interface AuditWorld {
  readonly ledgers: readonly Ledger[];
  readonly spans: ReadonlyMap<string, readonly Span[]>;
  /** The pool version that a set of twin weights stands for. */
  readonly versionOf: (weights: TwinWeights) => number;
}

const LOGPROB_EPSILON = 1e-9;

function ints(value: unknown): number[] | null {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v)) ? (value as number[]) : null;
}

function sameIds(a: readonly number[] | null, b: readonly number[]): boolean {
  if (a === null || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

/** The gateway's call spans of a rollout (not its per-try children, rewards or posted events). */
function callSpans(spans: readonly Span[]): Span[] {
  return spans.filter(
    (s) => s.attributes[A.ATTR_GEN_AI_OPERATION_NAME] !== undefined && s.attributes[A.ATTR_UPSTREAM_TRY] === undefined,
  );
}

/** The ledger entry of choice 0 of the call's first prompt: the one every reader trains on. */
export function ledgerEntryOf(world: AuditWorld, span: Span): LedgerEntry | null {
  const responseId = span.attributes[A.ATTR_GEN_AI_RESPONSE_ID];
  if (typeof responseId !== 'string') return null;
  let found: LedgerEntry | null = null;
  for (const ledger of world.ledgers) {
    for (const entry of ledger.byResponseId(responseId)) {
      // A gateway retry reuses the request id (and so the response id): the last generation is the one relayed.
      if (entry.choiceIndex === 0 && entry.promptIndex === 0 && (found === null || entry.seq > found.seq)) {
        found = entry;
      }
    }
  }
  return found;
}

function spanVersion(span: Span): number | null {
  const v = span.attributes[A.ATTR_MODEL_VERSION];
  return typeof v === 'number' ? v : null;
}

function expectedLogprob(options: { entry: LedgerEntry; span: Span; meaning: LogprobsMeaning; index: number }): number {
  const { entry, span, meaning, index } = options;
  const declared = span.attributes[A.ATTR_LOGPROBS_MODE] === A.LOGPROBS_MODE_VALUE_PROCESSED ? 'processed' : 'raw';
  const mode = meaning === 'behaviour' ? 'processed' : declared;
  return entry.logprobs[mode][index] ?? Number.NaN;
}

function spansOf(world: AuditWorld, rolloutId: string): Span[] {
  return callSpans(world.spans.get(rolloutId) ?? []);
}

/** Every way `sample` differs from what the engine really did; empty when it is a true sample. */
export function verifySample(world: AuditWorld, sample: AuditSample): string[] {
  const where = `${sample.source} row of ${sample.rolloutId} (calls ${sample.sequenceIds.join(',')})`;
  const problems: string[] = [];
  const { promptIds, responseIds, responseMask: mask, logprobs } = sample;
  if (mask.length !== responseIds.length)
    problems.push(`${where}: mask length ${mask.length} != ${responseIds.length}`);
  if (logprobs !== null && logprobs.length !== responseIds.length) {
    problems.push(`${where}: ${logprobs.length} logprobs for ${responseIds.length} response tokens`);
  }
  if (mask.some((m) => m !== 0 && m !== 1)) problems.push(`${where}: mask values other than 0 and 1`);
  if (sample.sequenceIds.length === 0) problems.push(`${where}: no calls`);
  if (problems.length > 0) return problems;

  const spans = spansOf(world, sample.rolloutId);
  const calls: Array<{ span: Span; entry: LedgerEntry }> = [];
  for (const seq of sample.sequenceIds) {
    const matching = spans.filter((s) => s.sequence_id === seq);
    const span = matching[0];
    if (matching.length !== 1 || span === undefined) {
      problems.push(`${where}: ${matching.length} call spans with sequence id ${seq}`);
      continue;
    }
    const entry = ledgerEntryOf(world, span);
    if (entry === null) {
      problems.push(`${where}: call ${seq} has no generation in the engine's ledger`);
      continue;
    }
    calls.push({ span, entry });
  }
  if (problems.length > 0) return problems;

  const full = [...promptIds, ...responseIds];
  const base = promptIds.length;
  let cursor = 0;
  const versions: number[] = [];
  for (const [k, { span, entry }] of calls.entries()) {
    const label = `${where}, call ${span.sequence_id}`;
    if (entry.status !== 'finished' || entry.clientDisconnected) {
      problems.push(`${label}: the engine did not finish this generation (${entry.status}, ${entry.finishReason})`);
    }
    const enginePrompt = entry.promptIds;
    if (k === 0) {
      if (!sameIds(promptIds, enginePrompt)) {
        problems.push(
          `${label}: prompt ids differ from the engine's prompt at index ${firstDifference(promptIds, enginePrompt)}`,
        );
        return problems;
      }
    } else {
      const context = full.slice(0, enginePrompt.length);
      if (enginePrompt.length < cursor || !sameIds(context, enginePrompt)) {
        problems.push(
          `${label}: the engine's prompt of this turn is not the row's context (differs at ${firstDifference(context, enginePrompt)})`,
        );
        return problems;
      }
      for (let i = cursor; i < enginePrompt.length; i++) {
        if (mask[i - base] !== 0)
          problems.push(`${label}: prompt token at ${i - base} (tool output or glue) has mask 1`);
        if (logprobs !== null && logprobs[i - base] !== 0) {
          problems.push(`${label}: gap token at ${i - base} has logprob ${logprobs[i - base]}, not 0`);
        }
      }
    }
    const start = enginePrompt.length;
    const version = spanVersion(span);
    if (version === null) problems.push(`${label}: the span states no model version`);
    else versions.push(version);
    // One message per kind of difference (the first token and how many), not one per token.
    const diffs = new Map<string, { first: string; count: number }>();
    const differ = (kind: string, detail: string) => {
      const d = diffs.get(kind);
      if (d) d.count += 1;
      else diffs.set(kind, { first: detail, count: 1 });
    };
    for (let j = 0; j < entry.tokenIds.length; j++) {
      const at = start + j - base;
      const engineId = entry.tokenIds[j];
      if (at >= responseIds.length) {
        problems.push(`${label}: the row ends at ${responseIds.length}; the engine generated ${entry.tokenIds.length}`);
        break;
      }
      if (full[start + j] !== engineId) {
        differ('id', `response token ${at} is ${full[start + j]}, the engine generated ${engineId}`);
      }
      if (mask[at] !== 1) differ('mask', `generated token ${at} has mask ${mask[at]}`);
      if (logprobs !== null) {
        const want = expectedLogprob({ entry, span, meaning: sample.logprobsMeaning, index: j });
        const got = logprobs[at] ?? Number.NaN;
        if (!(Math.abs(got - want) <= LOGPROB_EPSILON)) {
          differ('logprob', `logprob of token ${at} is ${got}, the engine's ${sample.logprobsMeaning} is ${want}`);
        }
      }
      const weights = entry.weights[j];
      const computedBy = weights === undefined ? null : world.versionOf(weights);
      if (version !== null && computedBy !== version) {
        differ('version', `token ${at} was computed by version ${computedBy}, the span says ${version}`);
      }
    }
    for (const { first, count } of diffs.values()) {
      problems.push(`${label}: ${first}${count > 1 ? ` (and ${count - 1} more tokens like it)` : ''}`);
    }
    cursor = start + entry.tokenIds.length;
  }
  if (cursor !== full.length) {
    problems.push(`${where}: ${full.length - cursor} response tokens after the last call's generation`);
  }
  if (sample.modelVersion !== null && versions.length > 0) {
    // Documented meaning of a row's version: the oldest among its calls (each call checked token by token above).
    const oldest = Math.min(...versions);
    if (sample.modelVersion !== oldest) {
      problems.push(`${where}: model_version ${sample.modelVersion}, its calls were computed by version ${oldest}`);
    }
  }
  return dedupe(problems);
}

function dedupe(problems: string[]): string[] {
  return [...new Set(problems)];
}

/** The wire's chosen-token logprobs (the gateway's copy of the engine's `logprobs.content`). */
function wireLogprobs(span: Span): unknown[] | null {
  const raw = span.attributes[A.ATTR_LOGPROBS_CONTENT];
  if (typeof raw !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed)) return null;
    return parsed.map((e: unknown) =>
      typeof e === 'object' && e !== null ? (e as Record<string, unknown>).logprob : undefined,
    );
  } catch {
    return null;
  }
}

function isErrorSpan(span: Span): boolean {
  const stream = span.attributes[A.ATTR_STREAM_STATUS];
  return span.status?.status_code === 'ERROR' || (typeof stream === 'string' && stream !== A.STREAM_STATUS_VALUE_OK);
}

type Judged = Omit<CallTruth, 'span' | 'superseded'>;

/** What must happen to one recorded call, judged from the ledger and from what the wire carried. */
function expectedOf(world: AuditWorld, span: Span): Judged {
  const entry = ledgerEntryOf(world, span);
  const prompt = ints(span.attributes[A.ATTR_PROMPT_TOKEN_IDS]);
  const response = ints(span.attributes[A.ATTR_RESPONSE_TOKEN_IDS]) ?? [];
  const idsOnWire = entry !== null && sameIds(prompt, entry.promptIds) && sameIds(response, entry.tokenIds);
  const judged = (expected: Expected): Judged => ({ entry, expected, idsOnWire });
  if (isErrorSpan(span) || entry === null || entry.clientDisconnected) return judged('error');
  if (entry.status === 'aborted') return judged('aborted');
  if (!sameIds(prompt, entry.promptIds) || response.length === 0) return judged('incomplete_token_ids');
  if (response.length !== entry.tokenIds.length) return judged('token_count_mismatch');
  if (!sameIds(response, entry.tokenIds)) return judged('incomplete_token_ids');
  const versions = new Set(entry.weights.map((w) => world.versionOf(w)));
  // The engine's weights changed mid-generation (a keep-mode pause around an in-place reload): no one version.
  if (versions.size > 1) return judged('version_changed_in_flight');
  // vLLM's placeholder for a step with no entry for the sampled token: -9999.0 in chat, null in completions.
  const wire = wireLogprobs(span);
  if (wire?.some((v) => v === null || (typeof v === 'number' && v <= A.LOGPROB_FLOOR))) {
    return judged('logprobs_floor');
  }
  return judged('train');
}

/** The ledger's verdict on every call of a rollout, in sequence order. */
export function callTruths(world: AuditWorld, rolloutId: string): CallTruth[] {
  const spans = spansOf(world, rolloutId).sort((a, b) => a.sequence_id - b.sequence_id);
  const judged = spans.map((span) => ({ span, ...expectedOf(world, span) }));
  return judged.map((t, i) => ({
    ...t,
    superseded:
      t.expected === 'aborted' &&
      t.entry !== null &&
      judged
        .slice(i + 1)
        .some(
          (later) =>
            later.span.attempt_id === t.span.attempt_id &&
            later.entry !== null &&
            sameIds(later.entry.promptIds, t.entry?.promptIds ?? []),
        ),
  }));
}

/** A rollout whose agent went on from an aborted answer: nothing of it may be trained on. */
function isTainted(truths: readonly CallTruth[]): boolean {
  return truths.some((t) => t.expected === 'aborted' && !t.superseded);
}

/**
 * Checks one reader's whole output for the audited rollouts: every sample true to the ledger, every call trained
 * on, left out or counted exactly as the ledger says (per call: readers that name the calls they leave out).
 */
export function auditReader(
  world: AuditWorld,
  output: {
    readonly samples: readonly AuditSample[];
    /** The calls the reader said it left out; null for a reader that only counts them (see expectedBatchDrops). */
    readonly drops: readonly ReportedDrop[] | null;
  },
): string[] {
  const problems = output.samples.flatMap((s) => verifySample(world, s));
  for (const rolloutId of world.spans.keys()) {
    const truths = callTruths(world, rolloutId);
    const tainted = isTainted(truths);
    const samples = output.samples.filter((s) => s.rolloutId === rolloutId);
    const drops = (output.drops ?? []).filter((d) => d.rolloutId === rolloutId);
    const explained = new Set<ReportedDrop>();
    for (const t of truths) {
      const seq = t.span.sequence_id;
      const label = `${samples[0]?.source ?? 'reader'}: ${rolloutId} call ${seq} (${t.expected}${t.superseded ? ', re-sent' : ''})`;
      const inSamples = samples.filter((s) => s.sequenceIds.includes(seq));
      const reported = drops.filter((d) => d.sequenceId === seq);
      for (const d of reported) explained.add(d);
      const reasons = reported.map((d) => d.reason);
      const silentlyOut = t.expected === 'error' || (t.expected === 'aborted' && t.superseded);
      let wantReasons: string[];
      let wantTrained: boolean;
      if (silentlyOut) {
        wantReasons = [];
        wantTrained = false;
      } else if (t.expected === 'train' || t.expected === 'logprobs_floor') {
        wantTrained = !tainted;
        wantReasons = t.expected === 'logprobs_floor' && !tainted ? ['logprobs_floor'] : [];
      } else {
        wantReasons = [t.expected];
        wantTrained = false;
      }
      if (wantTrained !== inSamples.length > 0) {
        problems.push(`${label}: ${wantTrained ? 'missing from' : 'present in'} the samples`);
      }
      if (output.drops !== null && JSON.stringify(reasons) !== JSON.stringify(wantReasons)) {
        problems.push(`${label}: reported ${JSON.stringify(reasons)}, the ledger says ${JSON.stringify(wantReasons)}`);
      }
      if (t.expected === 'logprobs_floor' && inSamples.some((s) => s.logprobs !== null)) {
        problems.push(`${label}: kept logprobs although the engine sent a placeholder`);
      }
    }
    for (const d of drops) {
      if (!explained.has(d)) problems.push(`${rolloutId}: reported a drop of call ${d.sequenceId} that is no call`);
    }
  }
  return problems;
}

/** What an RL batch's `stats.dropped` must count for the audited rollouts (readers that only count). */
export function expectedBatchDrops(world: AuditWorld): Record<string, number> {
  const counts: Record<string, number> = {
    aborted_rollouts: 0,
    incomplete_token_ids: 0,
    token_count_mismatch: 0,
    logprobs_floor: 0,
    version_changed_in_flight: 0,
  };
  for (const rolloutId of world.spans.keys()) {
    const truths = callTruths(world, rolloutId);
    const tainted = isTainted(truths);
    if (tainted) counts.aborted_rollouts = (counts.aborted_rollouts ?? 0) + 1;
    for (const t of truths) {
      if (t.expected === 'train' || t.expected === 'error' || t.expected === 'aborted') continue;
      // A tainted rollout yields nothing, so nothing of it is kept without logprobs either.
      if (t.expected === 'logprobs_floor' && tainted) continue;
      counts[t.expected] = (counts[t.expected] ?? 0) + 1;
    }
  }
  return counts;
}

/** Per model: the /metrics counters the audited calls must have moved. */
export interface ExpectedMetrics {
  readonly aborted: number;
  readonly incomplete: number;
  readonly countMismatch: number;
  readonly floor: number;
}

export function expectedMetrics(world: AuditWorld): Map<string, ExpectedMetrics> {
  const out = new Map<string, ExpectedMetrics>();
  for (const rolloutId of world.spans.keys()) {
    for (const t of callTruths(world, rolloutId)) {
      const model = String(t.span.attributes[A.ATTR_GEN_AI_REQUEST_MODEL] ?? '');
      const m = out.get(model) ?? { aborted: 0, incomplete: 0, countMismatch: 0, floor: 0 };
      out.set(model, {
        aborted: m.aborted + (t.expected === 'aborted' ? 1 : 0),
        // An aborted call counts there too when the wire lacked ids the engine had (not when it had none).
        incomplete:
          m.incomplete + (t.expected === 'incomplete_token_ids' || (t.expected === 'aborted' && !t.idsOnWire) ? 1 : 0),
        countMismatch: m.countMismatch + (t.expected === 'token_count_mismatch' ? 1 : 0),
        floor: m.floor + (t.expected === 'logprobs_floor' ? 1 : 0),
      });
    }
  }
  return out;
}
