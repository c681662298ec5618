// Incremental, byte-level splitter of a server-sent-event stream into whole events (docs/gateway.md).
// Only the bytes of each new chunk are scanned; an event split across reads is kept as a list of
// pieces and joined once when its blank line arrives, so a stream fed one byte at a time stays linear
// (docs/failure-classes.md#5). Line ends may be LF, CRLF or CR. Nothing is decoded here: multi-byte UTF-8
// characters split across reads are only turned into text once their event is complete.

const LF = 0x0a;
const CR = 0x0d;

export interface SseEventHandler {
  /**
   * One complete event, its bytes including the terminating blank line.
   * `startInChunk` is where it starts in the chunk being pushed, or -1 when it began in an earlier chunk
   * (then `event` is a fresh buffer joined from the pieces); `endInChunk` is where it ends in that chunk.
   */
  onSseEvent(event: Buffer, startInChunk: number, endInChunk: number): void;
}

export class SseSplitter {
  readonly #handler: SseEventHandler;
  #held: Buffer[] = [];
  #atLineStart = true;
  #lastWasCr = false;

  constructor(handler: SseEventHandler) {
    this.#handler = handler;
  }

  /** Bytes of an unfinished event waiting for more input. */
  get heldBytes(): number {
    let total = 0;
    for (const piece of this.#held) total += piece.length;
    return total;
  }

  push(chunk: Buffer): void {
    const length = chunk.length;
    let start = 0;
    let atLineStart = this.#atLineStart;
    let lastWasCr = this.#lastWasCr;
    for (let i = 0; i < length; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (lastWasCr) {
          // Second half of a CRLF: the CR already ended the line (or the event).
          lastWasCr = false;
          continue;
        }
      } else if (byte === CR) {
        lastWasCr = true;
      } else {
        lastWasCr = false;
        atLineStart = false;
        continue;
      }
      if (!atLineStart) {
        atLineStart = true;
        continue;
      }
      // A line end at the start of a line: the blank line that ends an event.
      const end = i + 1;
      this.#emit(chunk, start, end);
      start = end;
    }
    this.#atLineStart = atLineStart;
    this.#lastWasCr = lastWasCr;
    if (start < length) this.#held.push(start === 0 ? chunk : chunk.subarray(start));
  }

  /** Hands out what is left when the stream ends without a final blank line; returns it (or null). */
  flush(): Buffer | null {
    if (this.#held.length === 0) return null;
    const rest = this.#held.length === 1 ? (this.#held[0] as Buffer) : Buffer.concat(this.#held);
    this.#held = [];
    this.#atLineStart = true;
    this.#lastWasCr = false;
    return rest;
  }

  #emit(chunk: Buffer, start: number, end: number): void {
    if (this.#held.length === 0) {
      this.#handler.onSseEvent(chunk.subarray(start, end), start, end);
      return;
    }
    this.#held.push(chunk.subarray(start, end));
    const joined = Buffer.concat(this.#held);
    this.#held = [];
    this.#handler.onSseEvent(joined, -1, end);
  }
}
