// vLLM keys its prefix cache by the LoRA adapter's internal id, not by its weights: after an in-place
// reload (or any weight update that keeps the id) every shared prefix would reuse KV computed under the old
// weights. A `cache_salt` that changes with the pool's version puts each version's KV in its own namespace.
// The salt is a pure function of pool name and version, so every replica and every restart sends the same
// one and prefix reuse across replicas of one version is kept.
import { createHash } from 'node:crypto';

/** Hex characters of the SHA-256 kept: 128 bits, far beyond any collision concern, and short in vLLM's logs. */
const SALT_HEX_CHARS = 32;

function digest(parts: readonly unknown[]): string {
  // JSON of an array is an unambiguous encoding: ("a-b", 1) and ("a", "-b1") never hash alike.
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, SALT_HEX_CHARS);
}

/** The salt of every upstream body of `pool` at `version` (only characters any vLLM build accepts). */
export function versionCacheSalt(options: { readonly pool: string; readonly version: number }): string {
  return `rollgate-v${options.version}-${digest(['rollgate', options.pool, options.version])}`;
}

/**
 * A client's own salt, kept isolated per version: the result differs for every (client salt, version) pair,
 * so the client's isolation from other tenants holds and no version shares KV with another.
 */
export function clientCacheSalt(options: { readonly versionSalt: string; readonly clientSalt: string }): string {
  return `${options.versionSalt}-${digest([options.versionSalt, options.clientSalt])}`;
}
