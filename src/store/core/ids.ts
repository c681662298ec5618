// docs/architecture.md id shapes: a prefix plus hex of a hashed random UUID.
import { createHash, randomUUID } from 'node:crypto';

function hashedHex(length: number): string {
  return createHash('sha1').update(randomUUID()).digest('hex').slice(0, length);
}

export function newRolloutId(): string {
  return `ro-${hashedHex(12)}`;
}

export function newAttemptId(): string {
  return `at-${hashedHex(8)}`;
}

export function newResourcesId(): string {
  return `rs-${hashedHex(12)}`;
}

/**
 * What a rollout or attempt id may be, on every path that names one (store API, v1, proxy, OTLP): ids end up in
 * URL paths, headers, logs and spans, so they stay printable and short. The store refuses others too.
 */
const ID_PATTERN = /^[\w.:@+-]{1,256}$/;
export const ID_RULE = '1-256 characters of [A-Za-z0-9_.:@+-]';

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}
