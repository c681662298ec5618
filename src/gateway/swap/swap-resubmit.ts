// The gateway's half of an abort-resubmit weight swap (docs/weight-swaps.md): the swap marks every call of the pool in
// flight (POST /admin/pools/:model/resubmit), then aborts the engines' generations. A marked call whose answer comes
// back aborted is not passed on to its agent (resubmit-sink.ts):
// - a non-stream answer is dropped and the call is sent again (a new sequence id, so a new span) once the gate lets
//   calls through, i.e. under the new weights: the agent only waits;
// - a completions stream is continued: the tokens already relayed stay with the agent, and a resubmission whose prompt
//   is the recorded prompt ids plus the response ids so far generates the rest on the same response. Its span says
//   which try it replaces (`rollgate.resubmit_of`), so training leaves the aborted try out without dropping the
//   rollout, and records the answer as the agent read it: the original prompt, every token, and which weights
//   sampled each (continued-call.ts);
// - a chat or Responses stream cannot be continued faithfully (their prompt is messages the engine renders and
//   tokenises again, and the parsers that made the tool calls and reasoning would restart mid-answer), so one that
//   relayed tokens ends with a retryable error event in place of the aborted chunk, and the agent calls again; one
//   that relayed none is sent again as it was, on the same response (the agent only waits).
// The aborted try keeps its own span with `finish_reason: "abort"`, which no training reader takes as a whole answer.
// Unmarked calls pass straight through: the only cost is one set insertion per call of a pool in this mode.
import { ATTR_RESUBMIT_OF } from '../../contracts/span-attributes.js';
import { readStoredCall } from '../../contracts/stored-call.js';
import { openAIErrorBody } from '../../errors.js';
import type { LightningStore } from '../../store/core/types.js';
import type { ForwardCall } from '../engine/forward-call.js';
import type { ForwardEngine } from '../engine/forward-engine.js';
import { type ContinuedPrefix, recordedSegments } from './continued-call.js';
import { ResubmitSink } from './resubmit-sink.js';

/** vLLM's and SGLang's (and OpenAI's) max_tokens of a completions request that names none. */
const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;
/** Resubmissions of one call at most: a call aborted by that many swaps in a row fails instead of waiting on. */
const MAX_RESUBMITS = 3;
const STREAM_ABORTED = openAIErrorBody({
  message:
    'The generation was aborted by a weight update (swap mode abort-resubmit) and this stream cannot be continued ' +
    'faithfully: call again',
  type: 'service_unavailable',
  code: 'weights_swapped',
});
const ABORTED_TOO_OFTEN = openAIErrorBody({
  message: `The generation was aborted by ${MAX_RESUBMITS + 1} weight updates in a row: call again`,
  type: 'service_unavailable',
  code: 'weights_swapped',
});

/** The calls of each pool in flight, as an abort-resubmit swap marks them. */
export class ResubmitBook {
  readonly #live = new Map<string, Set<LiveCall>>();

  /** Registers a call of `model` while it runs; `done` removes it. */
  track(model: string): LiveCall {
    let calls = this.#live.get(model);
    if (calls === undefined) {
      calls = new Set();
      this.#live.set(model, calls);
    }
    const set = calls;
    const call: LiveCall = {
      marked: false,
      done: () => {
        set.delete(call);
      },
    };
    set.add(call);
    return call;
  }

  /** Marks every call of `model` in flight now; returns how many. */
  mark(model: string): number {
    const calls = this.#live.get(model);
    if (calls === undefined) return 0;
    for (const call of calls) call.marked = true;
    return calls.size;
  }
}

export interface LiveCall {
  marked: boolean;
  readonly done: () => void;
}

export interface LiveCall {
  marked: boolean;
  readonly done: () => void;
}

/**
 * What an attributed call's span recorded of its answer (its first choice): the ids, their logprobs and versions.
 * Null when it recorded no ids. A continuation's span records the whole answer so far (continued-call.ts).
 */
export type RecordedIds = (options: {
  readonly rid: string;
  readonly aid: string;
  readonly seq: number;
}) => Promise<ContinuedPrefix | null>;

/** RecordedIds read from the store: the call's span (written before its last byte reached the agent). */
export function recordedIdsFromStore(store: Pick<LightningStore, 'querySpans'>): RecordedIds {
  return async ({ rid, aid, seq }) => {
    const page = await store.querySpans(rid, { attempt_id: aid });
    for (const span of page.items) {
      if (span.sequence_id !== seq) continue;
      const call = readStoredCall(span.attributes);
      const { promptIds, responseIds, modelVersion: version, responseLogprobs } = call;
      if (promptIds === null || responseIds === null || version === null) continue;
      const length = responseIds.length;
      return {
        promptIds,
        responseIds,
        length,
        logprobs: responseLogprobs?.length === length ? responseLogprobs : null,
        segments: recordedSegments({ recorded: call.versionSegments, length, version }),
      };
    }
    return null;
  };
}

export interface ResubmittingEngineOptions {
  readonly book: ResubmitBook;
  /** The pools in abort-resubmit mode right now; calls of other pools are not tracked at all. */
  readonly resubmits: (model: string) => boolean;
  /** A fresh sequence id for the resubmitted call of an attributed rollout attempt. */
  readonly nextSequenceId: (options: { readonly rid: string; readonly aid: string }) => Promise<number>;
  /** Where a stream's continuation finds the ids of its aborted try. */
  readonly recordedIds: RecordedIds;
}

/** A completions stream of one prompt and one sample: it can be continued from its token ids. */
function continuable(call: ForwardCall): boolean {
  const { body } = call;
  if (call.endpoint !== 'completions' || body.stream !== true || call.attribution === null) return false;
  if ((body.n !== undefined && body.n !== 1) || body.best_of !== undefined || body.echo === true) return false;
  const prompt = body.prompt;
  return typeof prompt === 'string' || (Array.isArray(prompt) && prompt.every((t) => Number.isInteger(t)));
}

/**
 * The body that generates the rest of an aborted completion (the client's `first` body with its prompt ids and the
 * response ids so far as the prompt), and what the agent already has of the answer.
 */
async function continuationOf(
  call: ForwardCall,
  options: { readonly first: ForwardCall; readonly recordedIds: RecordedIds },
): Promise<{ readonly body: Readonly<Record<string, unknown>>; readonly prefix: ContinuedPrefix } | null> {
  if (call.attribution === null) return null;
  // The aborted try's span covers the whole answer so far, a continuation's included.
  const prefix = await options.recordedIds(call.attribution);
  if (prefix === null || prefix.promptIds.length === 0) return null;
  const { body } = options.first;
  const maxTokens = body.max_tokens;
  // The tokens left of the answer's budget; an absent max_tokens is the completions API's default.
  const budget = typeof maxTokens === 'number' ? maxTokens : COMPLETIONS_DEFAULT_MAX_TOKENS;
  const left = maxTokens === null ? null : budget - prefix.responseIds.length;
  if (left !== null && left <= 0) return null;
  return {
    body: {
      ...body,
      prompt: [...prefix.promptIds, ...prefix.responseIds],
      ...(left === null ? {} : { max_tokens: left }),
    },
    prefix,
  };
}

/** Forwards `first` until its answer is not an aborted one of a marked call (at most MAX_RESUBMITS more times). */
async function forwardResubmitting(options: {
  readonly inner: ForwardEngine;
  readonly book: ResubmitBook;
  readonly model: string;
  readonly first: ForwardCall;
  readonly gateway: ResubmittingEngineOptions;
  readonly gone: () => boolean;
}): Promise<void> {
  const { inner, book, model, first } = options;
  const stream = first.body.stream === true;
  const canContinue = continuable(first);
  let call = first;
  let continuation = false;
  for (let attempt = 0; ; attempt++) {
    const live = book.track(model);
    const sink = new ResubmitSink({
      agent: first.sink,
      marked: () => live.marked,
      endpoint: first.endpoint,
      stream,
      continuable: canContinue,
      continuation,
      failure: STREAM_ABORTED,
    });
    try {
      await inner.forward({ ...call, sink });
    } finally {
      live.done();
    }
    if (!sink.aborted || sink.streamFailed || options.gone()) return;
    if (attempt >= MAX_RESUBMITS) {
      if (stream) {
        sink.failNow();
        return;
      }
      const body = Buffer.from(JSON.stringify(ABORTED_TOO_OFTEN));
      first.sink.writeHead(503, { 'content-type': 'application/json', 'content-length': body.length });
      first.sink.end(body);
      return;
    }
    let body = call.body;
    let continues: ContinuedPrefix | undefined;
    if (stream && !sink.restart) {
      const next = await continuationOf(call, { first, recordedIds: options.gateway.recordedIds });
      if (next === null) {
        sink.failNow();
        return;
      }
      body = next.body;
      continues = next.prefix;
    }
    // The agent has the stream's head already: the next try's is dropped.
    if (stream) continuation = true;
    // The resubmission is a call of its own for the store: the aborted try keeps its span and sequence id. Its own
    // request id too: vLLM names the response after it, and readers keep the first answer of a response id.
    const aborted = call.attribution;
    const attribution = aborted === null ? null : { ...aborted, seq: await options.gateway.nextSequenceId(aborted) };
    const { rawBody: _sentBytes, continues: _previous, ...rest } = call;
    call = {
      ...rest,
      // The client's bytes stand for its own body only: a continuation's body is serialised again.
      ...(body === first.body && first.rawBody !== undefined ? { rawBody: first.rawBody } : {}),
      body,
      attribution,
      requestId: `${first.requestId}-resubmit-${attempt + 1}`,
      ...(continues === undefined ? {} : { continues }),
      ...(aborted === null ? {} : { spanAttributes: { ...first.spanAttributes, [ATTR_RESUBMIT_OF]: aborted.seq } }),
    };
  }
}

/**
 * Wraps the (gated) forward engine: an aborted answer of a marked call is sent again, continued (a completions stream) or
 * failed retryably (other streams).
 */
export function resubmittingEngine(inner: ForwardEngine, options: ResubmittingEngineOptions): ForwardEngine {
  const { book } = options;
  return {
    async forward(first) {
      const model = first.poolModel ?? first.body.model;
      if (typeof model !== 'string' || !options.resubmits(model)) return inner.forward(first);
      // An agent that hung up while its aborted call waited must not be sent again: GPU work nobody reads.
      let gone = false;
      const onClose = () => {
        gone = true;
      };
      first.sink.on('close', onClose);
      try {
        await forwardResubmitting({ inner, book, model, first, gateway: options, gone: () => gone });
      } finally {
        first.sink.removeListener('close', onClose);
      }
    },
    listModels: () => inner.listModels(),
    close: () => inner.close(),
  };
}
