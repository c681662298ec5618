// Byte surgery on a serialised JSON object: the values of the named members become `null`, every other
// byte stays as the backend wrote it (number spelling such as `-9999.0`, escapes, key order). Re-serialising
// a parsed chunk would change those, and an agent that asked for logprobs itself must get the backend's own
// bytes for them. Names are found with a native search, not a byte loop: a JSON string can only hold `"` as
// `\"`, so `"name"` with bare quotes is a whole string, never text inside one; followed by `:` it is a member
// name. Only the value after each hit is walked, to find where it ends.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const SPACE = 0x20;
const NULL_BYTES = Buffer.from('null');

/** A member to null: its name pattern (memberPattern) and how many non-null values of it the JSON holds. */
export interface MemberCount {
  readonly pattern: Buffer;
  readonly count: number;
}

/** The pattern nullMembers searches for: the member name as a JSON string (`"name"`, no escapes in it). */
export function memberPattern(name: string): Buffer {
  return Buffer.from(JSON.stringify(name));
}

function isWhitespace(byte: number | undefined): boolean {
  return byte === SPACE || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function isNullLiteral(bytes: Buffer, start: number, end: number): boolean {
  return (
    end - start === 4 &&
    bytes[start] === 0x6e &&
    bytes[start + 1] === 0x75 &&
    bytes[start + 2] === 0x6c &&
    bytes[start + 3] === 0x6c
  );
}

/** Index just past the string whose opening quote is at `at`, or -1 when it never closes. */
function stringEnd(bytes: Buffer, at: number): number {
  let from = at + 1;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote === -1) return -1;
    let backslashes = 0;
    for (let i = quote - 1; bytes[i] === BACKSLASH; i--) backslashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Index just past the JSON value that starts at `at`, or -1 when it is not well formed. */
function valueEnd(bytes: Buffer, at: number): number {
  const first = bytes[at];
  if (first === QUOTE) return stringEnd(bytes, at);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (let i = at; i < bytes.length; i++) {
      const byte = bytes[i];
      if (byte === QUOTE) {
        const end = stringEnd(bytes, i);
        if (end === -1) return -1;
        i = end - 1;
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        depth++;
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number or a literal: it runs to the next separator.
  let i = at;
  while (i < bytes.length) {
    const byte = bytes[i];
    if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isWhitespace(byte)) break;
    i++;
  }
  return i > at ? i : -1;
}

/**
 * Replaces the values of the last `count` non-null members named by each entry's `pattern` with `null`. The
 * counts come from the parsed JSON, so each search stops at its last hit. It runs from the end: vLLM writes the
 * injected members last in a choice (`token_ids`) or in the chunk (`prompt_token_ids`), so the search passes few
 * bytes. Returns null when fewer are found, a value cannot be delimited, or two values overlap: the caller then
 * serialises the parsed object instead.
 */
export function nullMembers(bytes: Buffer, members: readonly MemberCount[]): Buffer | null {
  const spans: number[] = [];
  for (const { pattern, count } of members) {
    let found = 0;
    let before = bytes.length - pattern.length;
    while (found < count) {
      const at = before < 0 ? -1 : bytes.lastIndexOf(pattern, before);
      if (at === -1) return null;
      before = at - 1;
      let start = at + pattern.length;
      while (isWhitespace(bytes[start])) start++;
      // The same text as a string value (`"content":"token_ids"`) is not a member name.
      if (bytes[start] !== COLON) continue;
      start++;
      while (isWhitespace(bytes[start])) start++;
      const end = valueEnd(bytes, start);
      if (end === -1) return null;
      if (!isNullLiteral(bytes, start, end)) {
        spans.push(start, end);
        found++;
      }
    }
  }
  if (spans.length === 0) return bytes;
  const order: number[] = [];
  for (let i = 0; i < spans.length; i += 2) order.push(i);
  if (order.length > 1) order.sort((a, b) => (spans[a] as number) - (spans[b] as number));
  const pieces: Buffer[] = [];
  let cursor = 0;
  for (const i of order) {
    const start = spans[i] as number;
    if (start < cursor) return null;
    pieces.push(bytes.subarray(cursor, start), NULL_BYTES);
    cursor = spans[i + 1] as number;
  }
  pieces.push(bytes.subarray(cursor));
  return Buffer.concat(pieces);
}
