// Where a call's answer goes: the subset of node's ServerResponse the forward path writes to, so
// bytes go straight from undici's buffers to the agent's socket without a web-stream hop.
import type { OutgoingHttpHeaders } from 'node:http';

export interface AgentSink {
  writeHead(statusCode: number, headers: OutgoingHttpHeaders): unknown;
  write(chunk: Uint8Array): boolean;
  end(chunk?: Uint8Array): unknown;
  on(event: 'close', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  destroy(): unknown;
  readonly headersSent: boolean;
  /**
   * One chat or completions stream chunk the relay has already parsed, in place of its event's bytes. Only a sink
   * that reads chunks rather than bytes (a translating sink) has it: it would otherwise split and parse every event
   * again. Returns false when the producer should pause, as write() does.
   */
  writeChunk?(chunk: Readonly<Record<string, unknown>>): boolean;
}
