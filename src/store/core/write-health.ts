// Whether a store can make a write durable right now, and if not, why: what readiness reports (docs/durability.md).
// A store that cannot write must say so before callers find out one lost write at a time.

export type WriteHealth = { readonly writable: true } | { readonly writable: false; readonly reason: string };

export const WRITABLE: WriteHealth = { writable: true };

export function unwritable(reason: string): WriteHealth {
  return { writable: false, reason };
}
