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
