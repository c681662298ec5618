// Logprobs on the wire, from the sampler's per-step distributions: chat entries (`-9999.0` for -inf and for a
// step with no entry for the sampled token) and completions arrays (`null` for a missing entry), plus the
// stand-in's misalignment faults.
import type { Sequence } from './generation.js';
import type { Candidate } from './sampler.js';
import type { TwinTokenizer } from './tokenizer.js';
import type { LogprobsFaultMode, LogprobsMode } from './types.js';
import { codePointLength } from './util.js';

export const FLOOR = -9999.0;

export interface LogprobFormat {
  mode: LogprobsMode;
  /** Alternatives to list (chat top_logprobs, completions logprobs). */
  top: number;
  asTokenIds: boolean;
  /** Every k-th generated token has no entry (0 = never). */
  floorEvery: number;
  tokenizer: TwinTokenizer;
}

export interface ChatLogprobEntry {
  token: string;
  logprob: number | null;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/** One token of `/inference/v1/generate`'s logprobs: ids and ranks instead of text. */
export interface GenerateLogprobEntry {
  token_id: number;
  logprob: number;
  rank: number;
  top_logprobs: { token_id: number; logprob: number; rank: number }[];
}

export interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: (number | null)[];
  tokens: string[];
  top_logprobs: (Record<string, number> | null)[];
}

function value(c: Candidate, mode: LogprobsMode): number {
  return Math.max(mode === 'raw' ? c.raw : c.processed, FLOOR);
}

function shown(id: number, fmt: LogprobFormat): string {
  return fmt.asTokenIds ? `token_id:${id}` : fmt.tokenizer.tokenText(id);
}

const bytesOf = (text: string): number[] => [...Buffer.from(text, 'utf8')];

function missing(position: number, fmt: LogprobFormat): boolean {
  return fmt.floorEvery > 0 && (position + 1) % fmt.floorEvery === 0;
}

/** The sampled token first, then the others by rank: the order vLLM's per-step logprob dict has. */
function ordered(seq: Sequence, position: number): Candidate[] {
  const dist = seq.distributions[position]!;
  return [dist.sampled, ...dist.ranked.filter((c) => c !== dist.sampled)];
}

/**
 * `/inference/v1/generate`'s logprobs (vLLM 0.30+): the sampled token with its rank (1 = best), and in
 * `top_logprobs` the sampled token first, then the best others, `max(k, 1)` entries in all (measured on 0.32.0:
 * `logprobs: 2` with the sampled token at rank 3 lists ranks 3 and 1).
 */
export function generateEntries(
  seq: Sequence,
  options: { start: number; end: number; top: number; mode: LogprobsMode },
): GenerateLogprobEntry[] {
  const out: GenerateLogprobEntry[] = [];
  for (let p = options.start; p < options.end; p++) {
    const dist = seq.distributions[p]!;
    const rank = (c: Candidate) => dist.ranked.indexOf(c) + 1;
    const entry = (c: Candidate) => ({ token_id: c.id, logprob: value(c, options.mode), rank: rank(c) });
    out.push({
      ...entry(dist.sampled),
      top_logprobs: ordered(seq, p).slice(0, Math.max(options.top, 1)).map(entry),
    });
  }
  return out;
}

export function chatEntries(
  seq: Sequence,
  options: { start: number; end: number; fmt: LogprobFormat },
): ChatLogprobEntry[] {
  const { fmt, start, end } = options;
  const out: ChatLogprobEntry[] = [];
  for (let p = start; p < end; p++) {
    const id = seq.ids[p]!;
    const token = shown(id, fmt);
    if (missing(p, fmt)) {
      out.push({ token, logprob: FLOOR, bytes: bytesOf(token), top_logprobs: [] });
      continue;
    }
    const cands = ordered(seq, p);
    out.push({
      token,
      logprob: value(cands[0]!, fmt.mode),
      bytes: bytesOf(token),
      top_logprobs: cands.slice(0, fmt.top).map((c) => {
        const t = shown(c.id, fmt);
        return { token: t, logprob: value(c, fmt.mode), bytes: bytesOf(t) };
      }),
    });
  }
  return out;
}

export function completionLogprobs(
  seq: Sequence,
  options: { start: number; end: number; textOffset: number; fmt: LogprobFormat },
): CompletionLogprobs {
  const { fmt, start, end } = options;
  const out: CompletionLogprobs = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
  let offset = options.textOffset;
  for (let p = start; p < end; p++) {
    const id = seq.ids[p]!;
    const token = shown(id, fmt);
    out.text_offset.push(offset);
    offset += id === fmt.tokenizer.eosId ? 0 : codePointLength(fmt.tokenizer.decode([id], { skipSpecial: true }));
    out.tokens.push(token);
    if (missing(p, fmt)) {
      out.token_logprobs.push(null);
      out.top_logprobs.push(null);
      continue;
    }
    const cands = ordered(seq, p);
    out.token_logprobs.push(value(cands[0]!, fmt.mode));
    const top: Record<string, number> = {};
    for (const c of cands.slice(0, fmt.top + 1)) top[shown(c.id, fmt)] ??= value(c, fmt.mode);
    out.top_logprobs.push(top);
  }
  return out;
}

export const NAN_MARK = '__mock_vllm_nan__';

/** Applies a logprobs fault to the entry list of the last token chunk (or the whole response). */
function distortList<T>(list: T[], mode: LogprobsFaultMode, setNull: (item: T) => T, setNan: (item: T) => T): T[] {
  if (list.length === 0) return list;
  switch (mode) {
    case 'short':
      return list.slice(0, -1);
    case 'long':
      return [...list, list[list.length - 1]!];
    case 'null':
      return [...list.slice(0, -1), setNull(list[list.length - 1]!)];
    case 'nan':
      return [...list.slice(0, -1), setNan(list[list.length - 1]!)];
  }
}

export function distortChat(entries: ChatLogprobEntry[], mode: LogprobsFaultMode): ChatLogprobEntry[] {
  return distortList(
    entries,
    mode,
    (e) => ({ ...e, logprob: null }),
    (e) => ({ ...e, logprob: NAN_MARK as unknown as number }),
  );
}

export function distortCompletion(lp: CompletionLogprobs, mode: LogprobsFaultMode): CompletionLogprobs {
  const idx = lp.token_logprobs.length - 1;
  if (idx < 0) return lp;
  if (mode === 'short' || mode === 'long') {
    const same = <T>(x: T) => x;
    return {
      text_offset: distortList(lp.text_offset, mode, same, same),
      token_logprobs: distortList(lp.token_logprobs, mode, same, same),
      tokens: distortList(lp.tokens, mode, same, same),
      top_logprobs: distortList(lp.top_logprobs, mode, same, same),
    };
  }
  const token_logprobs = [...lp.token_logprobs];
  token_logprobs[idx] = mode === 'null' ? null : (NAN_MARK as unknown as number);
  return { ...lp, token_logprobs };
}

// Python's json.dumps writes NaN as a bare token; JSON.stringify cannot, so a marker is replaced afterwards.
export function serialize(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes(NAN_MARK) ? text.replaceAll(`"${NAN_MARK}"`, 'NaN') : text;
}
