// A large JSON answer (thousands of rollouts, a full page of spans) written in slices. JSON.stringify of the whole
// answer and one write of its megabytes each hold the event loop for as long as they take (docs/input-limits.md);
// here the items are serialised a few milliseconds' worth at a time, each slice in a turn of its own, and sent as
// they are ready. The bytes are the same JSON that `c.json` would send.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** Serialising work per turn; the write of what it made follows in the same turn. */
const SLICE_MS = 4;
/** Below this many items the answer is written at once, as `c.json` would. */
const SLICED_FROM_ITEMS = 200;

const encoder = new TextEncoder();

/** `items` as a JSON array, or `{"items": [...], ...rest}` when `rest` is given (a page). */
export function jsonInSlices(
  c: Context,
  items: readonly unknown[],
  options: { status?: ContentfulStatusCode; rest?: Readonly<Record<string, unknown>> } = {},
): Response {
  const status = options.status ?? 200;
  const rest = options.rest;
  if (items.length < SLICED_FROM_ITEMS) return c.json(rest === undefined ? items : { items, ...rest }, status);
  const head = rest === undefined ? '[' : '{"items":[';
  const restJson = rest === undefined ? '' : JSON.stringify(rest);
  const tail = rest === undefined ? ']' : restJson === '{}' ? ']}' : `],${restJson.slice(1)}`;
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next > 0) await nextTurn();
      const started = performance.now();
      let text = next === 0 ? head : '';
      while (next < items.length && performance.now() - started < SLICE_MS) {
        // JSON.stringify(undefined) is undefined; in an array it is written as null, as JSON.stringify would.
        text += `${next === 0 ? '' : ','}${JSON.stringify(items[next]) ?? 'null'}`;
        next++;
      }
      if (next === items.length) {
        controller.enqueue(encoder.encode(text + tail));
        controller.close();
      } else controller.enqueue(encoder.encode(text));
    },
  });
  return c.body(body, status, { 'content-type': 'application/json' });
}
