// The agent sink of a Responses call served as a chat call: the chat answer becomes the Responses answer
// (translating-sink.ts does the plumbing). Streams become named events (stream.ts); a failure after the stream
// began is `response.failed`, so the agent never takes half an answer for a whole one. A whole chat completion
// becomes a Responses object (response.ts); an aborted generation a 503 with Retry-After the agent retries; error
// bodies are already OpenAI-shaped, which is the Responses API's own error shape, and pass as they are (a 429
// always with Retry-After: Codex does not retry one without it).
import type { OutgoingHttpHeaders } from 'node:http';
import type { AgentSink } from '../stream/agent-sink.js';
import { ABORTED_MESSAGE } from '../stream/chat-choice-reader.js';
import {
  DEFAULT_RETRY_AFTER_S,
  ensureRateLimitRetryAfter,
  JSON_CONTENT_TYPE,
  parseJson,
  STATUS_UNAVAILABLE,
  TranslatingSink,
  type WholeAnswer,
} from '../stream/translating-sink.js';
import { HEADER_RETRY_AFTER } from '../upstream/headers.js';
import { normaliseErrorMember } from '../upstream/upstream-error.js';
import { type AnswerContext, chatCompletionToResponse } from './response.js';
import { ChatToResponsesStream } from './stream.js';

export interface ResponsesSinkOptions {
  readonly agent: AgentSink;
  readonly context: AnswerContext;
}

function wholeAnswer(answer: WholeAnswer, context: AnswerContext): WholeAnswer {
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  if (answer.status >= 400) {
    ensureRateLimitRetryAfter(answer.status, headers);
    return { status: answer.status, headers, body: answer.body };
  }
  const translated = chatCompletionToResponse(parseJson(answer.body.toString('utf8')), context);
  headers['content-type'] = JSON_CONTENT_TYPE;
  if (translated.aborted) {
    headers[HEADER_RETRY_AFTER] = DEFAULT_RETRY_AFTER_S;
    const body = { error: { message: ABORTED_MESSAGE, type: 'server_error', param: null, code: 'engine_aborted' } };
    return { status: STATUS_UNAVAILABLE, headers, body: Buffer.from(JSON.stringify(body)) };
  }
  return { status: answer.status, headers, body: Buffer.from(JSON.stringify(translated.response)) };
}

export function responsesSink(options: ResponsesSinkOptions): AgentSink {
  const { context } = options;
  return new TranslatingSink({
    agent: options.agent,
    stream: () => {
      const translator = new ChatToResponsesStream(context);
      return {
        chunk: (chunk) => translator.chunk(chunk),
        finish: () => translator.finish(),
        fail: (error) => {
          const member = normaliseErrorMember(error, 'The upstream stream failed').error;
          return translator.fail({ code: member.code ?? member.type, message: member.message });
        },
      };
    },
    whole: (answer) => wholeAnswer(answer, context),
  });
}
