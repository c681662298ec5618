// A stream for the formats read from the answer so far: each chunk takes a snapshot of the answer (the tag formats
// read only the new text) and sends what is new since the last one. What a snapshot holds only grows (text held
// back while it could still be a tag, a call's name once it is complete, its arguments once the call is closed or
// the stream ends), so the deltas joined are the snapshot of the whole answer.
//
// Content that is only whitespace, before any other content, waits as vLLM's declarative engine makes it wait: it
// is sent with the first chunk that brings other text, dropped once a tool call has started, and sent at the end
// otherwise. Which chunk a newline arrives in therefore decides whether it reaches the agent, in vLLM and here alike.
import { type OutputStream, randomToolCallId } from './output-parser.js';
import type { AnswerDelta } from './think-reasoning-parser.js';

export interface SnapshotCall {
  readonly id?: string;
  /** Null until the name is complete. */
  readonly name: string | null;
  /** Null until the arguments are final. */
  readonly arguments: string | null;
}

export interface Snapshot {
  readonly reasoning: string;
  readonly content: string;
  /** Every call started so far, whether or not the request lets it be returned. */
  readonly calls: readonly SnapshotCall[];
}

export interface SnapshotStreamOptions {
  /** The request has tools: calls are sent (else they are only cut out of the content). */
  readonly emitCalls: boolean;
  /** Leading whitespace-only content waits (vLLM's declarative engine); false: sent as it comes (its legacy parsers). */
  readonly holdWhitespace?: boolean;
}

export type Snapshotter = (text: string, final: boolean) => Snapshot;

export class SnapshotStream implements OutputStream {
  readonly #snapshot: Snapshotter;
  readonly #emitCalls: boolean;
  readonly #holdWhitespace: boolean;
  #text = '';
  #pendingWhitespace = '';
  #contentStarted = false;
  #reasoning = 0;
  #content = 0;
  readonly #named: boolean[] = [];
  readonly #argued: boolean[] = [];

  constructor(snapshot: Snapshotter, options: SnapshotStreamOptions) {
    this.#snapshot = snapshot;
    this.#emitCalls = options.emitCalls;
    this.#holdWhitespace = options.holdWhitespace ?? true;
  }

  get toolsCalled(): boolean {
    return this.#named.length > 0;
  }

  next(deltaText: string, _deltaIds: readonly number[], finished: boolean): AnswerDelta | null {
    this.#text += deltaText;
    const now = this.#snapshot(this.#text, finished);
    const delta: AnswerDelta = {};
    if (now.reasoning.length > this.#reasoning) {
      delta.reasoning = now.reasoning.slice(this.#reasoning);
      this.#reasoning = now.reasoning.length;
    }
    const content = this.#gate(now.content.slice(this.#content), now.calls.length > 0, finished);
    this.#content = now.content.length;
    if (content !== '') delta.content = content;
    const calls: Record<string, unknown>[] = [];
    (this.#emitCalls ? now.calls : []).forEach((call, index) => {
      if (call.name === null) return;
      if (!this.#named[index]) {
        this.#named[index] = true;
        calls.push({ id: call.id ?? randomToolCallId(), type: 'function', index, function: { name: call.name } });
      }
      if (call.arguments !== null && !this.#argued[index]) {
        this.#argued[index] = true;
        if (call.arguments !== '') calls.push({ index, function: { arguments: call.arguments } });
      }
    });
    if (calls.length > 0) delta.tool_calls = calls;
    return Object.keys(delta).length === 0 ? null : delta;
  }

  /** The content to send for this chunk's new content (see the whitespace rule above). */
  #gate(added: string, callStarted: boolean, finished: boolean): string {
    if (this.#contentStarted || !this.#holdWhitespace) return added;
    const candidate = this.#pendingWhitespace + added;
    this.#pendingWhitespace = '';
    if (candidate.trim() !== '') {
      this.#contentStarted = true;
      return candidate;
    }
    if (callStarted || finished) return callStarted ? '' : candidate;
    this.#pendingWhitespace = candidate;
    return '';
  }
}
