// The `signature` of the thinking blocks rollgate answers with (docs/anthropic-messages.md#thinking-signatures).
// Anthropic clients keep a thinking block only when it carries a signature (the AI SDK drops one without, pi turns
// it into visible text), and send it back unchanged in the next turn's history. Rollgate signs the block's thinking
// text with an HMAC, so a block sent back is known to be reasoning this gateway answered with, word for word, and
// goes to the engine as that turn's `reasoning`; a block signed by anyone else (Anthropic's own API, another
// gateway, an edited text) is refused, as Anthropic's API refuses a signature it did not issue.
//
// The key is derived from the configured API keys, not drawn at random: every replica with the same config, and
// the same gateway after a restart, accepts the signatures any of them issued. A keyless gateway derives it from a
// fixed label; its signatures then only tell rollgate's blocks from foreign ones, which is all that keyless
// callers (who may call anything) could be held to.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Marks the signature scheme, so a later one can be told apart and a foreign signature is recognised at once. */
const SIGNATURE_PREFIX = 'rollgate.v1.';
const KEY_LABEL = 'rollgate thinking signature v1';

export class ThinkingSignatures {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  /** The key derived from the gateway's API keys (order and duplicates do not matter). */
  static fromKeys(keys: readonly string[]): ThinkingSignatures {
    const hmac = createHmac('sha256', KEY_LABEL);
    // Length-prefixed, so two key lists never concatenate to the same bytes.
    for (const key of [...new Set(keys)].sort()) hmac.update(`${key.length}:${key}\n`);
    return new ThinkingSignatures(hmac.digest());
  }

  /** The opaque signature of one thinking block's text. */
  sign(thinking: string): string {
    return SIGNATURE_PREFIX + this.#mac(thinking).toString('base64url');
  }

  /** Whether `signature` is the one this gateway gives `thinking`. */
  verify(thinking: string, signature: string): boolean {
    if (!signature.startsWith(SIGNATURE_PREFIX)) return false;
    const given = Buffer.from(signature.slice(SIGNATURE_PREFIX.length), 'base64url');
    const expected = this.#mac(thinking);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #mac(thinking: string): Buffer {
    return createHmac('sha256', this.#key).update(thinking, 'utf8').digest();
  }
}
