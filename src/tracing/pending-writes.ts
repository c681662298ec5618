// What the gateway needs from the span processor that writes to the store: the pending write of a
// span it just ended, so the last byte of the call waits for it (I3, pitfall 29).

export interface PendingSpanWrites {
  /** The store write of the span with this id, or undefined when none is pending (not attributed, or done). */
  whenWritten(spanId: string): Promise<void> | undefined;
}
