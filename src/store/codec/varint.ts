// Unsigned LEB128 varints, the length and count fields of the span formats (span-codec.ts, token-ids-varint-codec.ts).
// Arithmetic instead of shifts: values up to 2^53 stay exact (a shift would wrap at 2^31).

export function varintLength(value: number): number {
  let n = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) n++;
  return n;
}

/** Writes `value` at `start`; returns the offset after it. `out` must have room (5 bytes up to 2^35). */
export function writeVarint(out: Buffer, start: number, value: number): number {
  let at = start;
  let v = value;
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}

/** Reads the varint at `state.at` and moves past it; `what` names the buffer in the error when it is cut short. */
export function readVarint(buf: Uint8Array, state: { at: number }, what: string): number {
  let result = 0;
  let scale = 1;
  for (;;) {
    if (state.at >= buf.length) throw new Error(`truncated ${what}`);
    const byte = buf[state.at++]!;
    result += (byte & 0x7f) * scale;
    if (byte < 0x80) return result;
    scale *= 0x80;
  }
}
