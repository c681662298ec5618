// docs/failure-classes.md#5: the SSE splitter scans only new bytes, so 1-byte reads stay linear; events split
// across reads, CRLF separators and multi-byte UTF-8 split across reads all decode correctly.
import { describe, expect, it } from 'vitest';
import { readSseFields } from '../../../src/gateway/stream/sse-event.js';
import { SseSplitter } from '../../../src/gateway/stream/sse-splitter.js';

function collect(): { events: Buffer[]; splitter: SseSplitter } {
  const events: Buffer[] = [];
  const splitter = new SseSplitter({ onSseEvent: (event) => events.push(Buffer.from(event)) });
  return { events, splitter };
}

function feed(bytes: Buffer, size: number): Buffer[] {
  const { events, splitter } = collect();
  for (let i = 0; i < bytes.length; i += size) splitter.push(bytes.subarray(i, i + size));
  const rest = splitter.flush();
  if (rest !== null) events.push(rest);
  return events;
}

function bigStream(totalBytes: number): Buffer {
  const parts: string[] = [];
  let size = 0;
  let i = 0;
  while (size < totalBytes) {
    const line = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"tök ${i} 🙂"},"token_ids":[${i}]}]}\n\n`;
    parts.push(line);
    size += Buffer.byteLength(line);
    i++;
  }
  parts.push('data: [DONE]\n\n');
  return Buffer.from(parts.join(''));
}

describe('SseSplitter', () => {
  it('cuts events at blank lines with LF, CRLF and CR line ends', () => {
    const input = Buffer.from('data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n: comment\n\n');
    const events = feed(input, input.length).map((e) => readSseFields(e).data);
    expect(events).toEqual(['a', 'b', 'c', 'd']);
  });

  it('gives the same events for every read size, with multi-byte characters split across reads', () => {
    const input = Buffer.from(
      'data: {"x":"héllo 🙂"}\r\n\r\nevent: error\ndata: {"error":{}}\n\ndata: one\ndata: two\n\n',
    );
    const expected = feed(input, input.length).map((e) => readSseFields(e));
    expect(expected.map((f) => f.data)).toEqual(['{"x":"héllo 🙂"}', '{"error":{}}', 'one\ntwo']);
    expect(expected[1]?.event).toBe('error');
    for (const size of [1, 2, 3, 5, 7, 16]) {
      expect(feed(input, size).map((e) => readSseFields(e))).toEqual(expected);
    }
  });

  it('keeps every byte: the events joined equal the input', () => {
    const input = bigStream(50_000);
    expect(Buffer.concat(feed(input, 13)).equals(input)).toBe(true);
  });

  it('stays linear in 1-byte reads: 512 KB costs at most 16x 64 KB (quadratic would be 64x)', () => {
    // Socket-level 1-byte writes are coalesced by TCP before they reach us, so the worst case the
    // parser can see is a 1-byte read per call; what must not happen is re-scanning held bytes.
    const timeOneByteReads = (input: Buffer): number => {
      const slices: Buffer[] = [];
      for (let i = 0; i < input.length; i++) slices.push(input.subarray(i, i + 1));
      let best = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 2; round++) {
        const { splitter } = collect();
        const start = performance.now();
        for (const slice of slices) splitter.push(slice);
        best = Math.min(best, performance.now() - start);
      }
      return best;
    };
    const small = timeOneByteReads(bigStream(64 * 1024));
    const large = timeOneByteReads(bigStream(512 * 1024));
    expect(large).toBeLessThan(16 * Math.max(small, 5));
  });

  it('decodes a 1 MB stream identically in 1-byte and 16 KB reads', () => {
    const input = bigStream(1024 * 1024);
    const one = feed(input, 1);
    const big = feed(input, 16 * 1024);
    expect(one.length).toBe(big.length);
    expect(Buffer.concat(one).equals(Buffer.concat(big))).toBe(true);
  });
});
