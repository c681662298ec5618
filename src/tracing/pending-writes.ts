// What the gateway needs from the span processor that writes to the store: the pending write of a
// span it just ended, so the last byte of the call waits for it (docs/failure-classes.md#29), and how that write ended,
// so a call whose span was not stored is not reported as a success (docs/durability.md).

/**
 * How the store write of a call's span ended: `stored`; `orphaned` (its rollout was deleted while the call was in
 * flight, docs/failure-classes.md#50: expected, the agent keeps its answer); `failed` (the store refused or could not write it).
 */
export type SpanWriteOutcome = 'stored' | 'orphaned' | 'failed';

export interface PendingSpanWrites {
  /**
   * The store write of the span with this id, or undefined when none is pending (not attributed, or done).
   * Never rejects: a failed write resolves `failed`.
   */
  whenWritten(spanId: string): Promise<SpanWriteOutcome> | undefined;
}
