// The agent sink of a Messages API call: the chat forward path writes the engine's OpenAI answer into it, and it
// writes the Anthropic answer to the agent's own sink (translating-sink.ts does the plumbing). A stream is
// translated event by event (stream.ts); the relay's held last write (`data: [DONE]` once the span is stored, or
// its error event) becomes `message_delta` + `message_stop` or an `event: error`. A JSON answer (an error, a
// non-stream message, a cache hit) is written as one body once it is complete.
import type { OutgoingHttpHeaders } from 'node:http';
import type { AgentSink } from '../stream/agent-sink.js';
import {
  DEFAULT_RETRY_AFTER_S,
  ensureRateLimitRetryAfter,
  JSON_CONTENT_TYPE,
  parseJson,
  STATUS_UNAVAILABLE,
  TranslatingSink,
  type WholeAnswer,
} from '../stream/translating-sink.js';
import { HEADER_ANTHROPIC_REQUEST_ID, HEADER_RETRY_AFTER } from '../upstream/headers.js';
import { normaliseErrorJson, normaliseErrorMember } from '../upstream/upstream-error.js';
import {
  type AnthropicErrorBody,
  anthropicErrorBody,
  anthropicErrorEvent,
  anthropicStreamErrorBody,
} from './errors.js';
import { type AnswerContext, chatCompletionToMessage } from './response.js';
import { ABORTED_ERROR, ChatStreamTranslator } from './stream.js';

/** Characters of a non-JSON error body kept for the message. */
const ERROR_TEXT_CHARS = 500;

export interface AnthropicSinkOptions {
  /** Where the Anthropic answer goes (node's response, or a web one in process). */
  readonly agent: AgentSink;
  readonly context: AnswerContext;
  readonly requestId: string;
}

/** The forward path normalised JSON error bodies to OpenAI's shape; anything else is quoted as text. */
function errorBody(status: number, body: Buffer): AnthropicErrorBody {
  const text = body.toString('utf8');
  const parsed = parseJson(text);
  const message =
    parsed === undefined
      ? text.trim().slice(0, ERROR_TEXT_CHARS) || `Upstream returned HTTP ${status}`
      : normaliseErrorJson(parsed, status).error.message;
  return anthropicErrorBody({ status, message });
}

function wholeAnswer(answer: WholeAnswer, options: { context: AnswerContext; requestId: string }): WholeAnswer {
  const headers: OutgoingHttpHeaders = { ...answer.headers, [HEADER_ANTHROPIC_REQUEST_ID]: options.requestId };
  let status = answer.status;
  let body: unknown;
  if (status >= 400) {
    body = errorBody(status, answer.body);
    ensureRateLimitRetryAfter(status, headers);
  } else {
    const translated = chatCompletionToMessage(parseJson(answer.body.toString('utf8')), options.context);
    if (translated.aborted) {
      status = STATUS_UNAVAILABLE;
      body = ABORTED_ERROR;
      headers[HEADER_RETRY_AFTER] = DEFAULT_RETRY_AFTER_S;
    } else {
      body = translated.message;
    }
  }
  headers['content-type'] = JSON_CONTENT_TYPE;
  return { status, headers, body: Buffer.from(JSON.stringify(body)) };
}

export class AnthropicSink extends TranslatingSink {
  constructor(options: AnthropicSinkOptions) {
    const { context, requestId } = options;
    super({
      agent: options.agent,
      streamHeaders: { [HEADER_ANTHROPIC_REQUEST_ID]: requestId },
      stream: () => {
        const translator = new ChatStreamTranslator(context);
        return {
          chunk: (chunk) => translator.chunk(chunk),
          finish: () => translator.finish(),
          // The relay's own error event (the engine's error event, a truncated or garbled stream), OpenAI-shaped.
          fail: (error) =>
            anthropicErrorEvent(
              anthropicStreamErrorBody(normaliseErrorMember(error, 'The upstream stream failed')),
            ).toString('utf8'),
        };
      },
      whole: (answer) => wholeAnswer(answer, { context, requestId }),
    });
  }
}
