// Drives a StreamRelay over an in-memory sink, feeding the input in reads of a given size, and returns what the
// agent would have received, the held-back last event, the failure reported, and the capture.

import type { Endpoint } from '../../src/contracts/call-record.js';
import type { OpenAIErrorBody } from '../../src/errors.js';
import { CallCapture } from '../../src/gateway/capture/call-capture.js';
import type { AgentViewStrip } from '../../src/gateway/request/agent-view.js';
import type { AgentSink } from '../../src/gateway/stream/agent-sink.js';
import { StreamRelay } from '../../src/gateway/stream/stream-relay.js';

export interface RelayRun {
  /** Everything written to the agent, in order. */
  readonly out: string;
  /** The last event handed to onDone (written only once the span is stored). */
  readonly done: Buffer | null;
  readonly failure: OpenAIErrorBody | null;
  readonly capture: CallCapture;
}

export function runRelay(
  input: string,
  options: {
    readonly endpoint: Endpoint;
    readonly clientAskedUsage: boolean;
    readonly readSize: number;
    /** What the agent must not get back (agent-view.ts); default: nothing, the stream is relayed as it comes. */
    readonly strip?: AgentViewStrip | null;
  },
): RelayRun {
  const written: Buffer[] = [];
  const sink = {
    write(chunk: Uint8Array) {
      written.push(Buffer.from(chunk));
      return true;
    },
  } as unknown as AgentSink;
  let done: Buffer | null = null;
  let failure: OpenAIErrorBody | null = null;
  const capture = new CallCapture(options.endpoint);
  const relay = new StreamRelay({
    sink,
    capture,
    clientAskedUsage: options.clientAskedUsage,
    strip: options.strip ?? null,
    hooks: {
      onFirstEvent: () => undefined,
      onDone: (event) => {
        done = event;
      },
      onStreamError: (error) => {
        failure = error;
      },
    },
  });
  const bytes = Buffer.from(input);
  for (let i = 0; i < bytes.length; i += options.readSize) relay.push(bytes.subarray(i, i + options.readSize));
  relay.end();
  return { out: Buffer.concat(written).toString(), done, failure, capture };
}
