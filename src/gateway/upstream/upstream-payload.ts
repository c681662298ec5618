// The bytes sent upstream. Re-serialising the rewritten body costs a full JSON.stringify per call, which for
// a 100 KB prompt (tool definitions, long histories) is most of the proxy's own CPU. When the rewrite only
// added keys the client did not send (return_token_ids, logprobs, stream_options, cache_salt: the usual case),
// the client's own bytes are sent with those keys appended before the closing brace: the same JSON object for
// any parser. Any override of a key the client sent falls back to serialising the whole body.
import type { RewrittenBody } from '../request/body-rewrite.js';

const CLOSE_BRACE = 0x7d;

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function hasAnyKey(body: Readonly<Record<string, unknown>>): boolean {
  for (const _ in body) return true;
  return false;
}

export interface UpstreamPayloadOptions {
  /** The client's parsed body (what `raw` decodes to). */
  readonly client: Readonly<Record<string, unknown>>;
  /** The client's request bytes, when the route kept them. */
  readonly raw: Buffer | undefined;
  readonly rewritten: Pick<RewrittenBody, 'body' | 'overrides' | 'injected'>;
}

export function upstreamPayload(options: UpstreamPayloadOptions): Buffer {
  const { client, raw, rewritten } = options;
  if (raw !== undefined) {
    const spliced = appendKeys(raw, client, rewritten);
    if (spliced !== null) return spliced;
  }
  return Buffer.from(JSON.stringify(rewritten.body));
}

function appendKeys(
  raw: Buffer,
  client: Readonly<Record<string, unknown>>,
  rewritten: UpstreamPayloadOptions['rewritten'],
): Buffer | null {
  let end = raw.length - 1;
  while (end >= 0 && isJsonWhitespace(raw[end] as number)) end--;
  // Not an object's bytes (an empty body parsed as {}): serialise.
  if (end < 0 || raw[end] !== CLOSE_BRACE) return null;
  const overridden = Object.keys(rewritten.overrides);
  const added = rewritten.injected.length === 0 ? overridden : [...overridden, ...rewritten.injected];
  if (added.length === 0) return raw;
  for (const key of added) if (Object.hasOwn(client, key)) return null;
  let suffix = '';
  let first = !hasAnyKey(client);
  for (const key of added) {
    suffix += `${first ? '' : ','}${JSON.stringify(key)}:${JSON.stringify(rewritten.body[key])}`;
    first = false;
  }
  return Buffer.concat([raw.subarray(0, end), Buffer.from(`${suffix}}`)]);
}
