// POST /v1/messages/count_tokens: the conversation translated like a call (request.ts), tokenized by the engine's
// own chat template through vLLM's `/tokenize` (which takes `messages` and `tools` and applies the template), so
// the count is the prompt the call would really get. Other backends have no such route: that is a clear 501.
import { GatewayError, isGatewayError } from '../../errors.js';
import { isObj } from '../history/narrow.js';
import type { ModelRegistry } from '../pools/model-registry.js';
import { translateConversation } from './request.js';
import type { ThinkingSignatures } from './thinking-signature.js';

const TOKENIZE_PATH = '/tokenize';
/** The body kept for an error message. */
const ERROR_TEXT_CHARS = 300;

export interface CountTokensOptions {
  readonly registry: Pick<ModelRegistry, 'resolve'>;
  /** The client's count_tokens body (a Messages request without the generation fields). */
  readonly body: Readonly<Record<string, unknown>>;
  readonly rolloutId: string | null;
  readonly requestId: string;
  /** Thinking blocks in the history are checked as on a call. */
  readonly signatures: ThinkingSignatures;
}

export interface TokenCount {
  readonly input_tokens: number;
}

/** vLLM serves `/tokenize` at the server root, outside the OpenAI prefix the backend URL ends with. */
function serverRoot(basePath: string): string {
  return basePath.replace(/\/v1$/, '');
}

function engineMessage(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObj(parsed) && isObj(parsed.error) && typeof parsed.error.message === 'string') return parsed.error.message;
    if (isObj(parsed) && typeof parsed.detail === 'string') return parsed.detail;
    if (isObj(parsed) && typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: the text itself.
  }
  return text.slice(0, ERROR_TEXT_CHARS);
}

export async function countTokens(options: CountTokensOptions): Promise<TokenCount> {
  const { body } = options;
  const conversation = translateConversation(body, options.signatures);
  const route = options.registry.resolve(body.model, { rolloutId: options.rolloutId });
  const { backend, model } = route;
  if (backend.type !== 'vllm') {
    throw new GatewayError(
      'not_implemented',
      `count_tokens needs a vLLM backend (it uses the engine's /tokenize); model '${model.name}' is served by an ` +
        'OpenAI-compatible backend',
    );
  }
  const request: Record<string, unknown> = {
    model: model.upstreamModel ?? body.model,
    messages: conversation.messages,
    add_generation_prompt: true,
  };
  if (conversation.tools !== null) request.tools = conversation.tools;
  const payload = Buffer.from(JSON.stringify(request));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(payload.length),
    'x-request-id': options.requestId,
  };
  if (backend.authorization !== null) headers.authorization = backend.authorization;
  let status: number;
  let text: string;
  try {
    const response = await backend.pool.request({
      path: serverRoot(backend.basePath) + TOKENIZE_PATH,
      method: 'POST',
      headers,
      body: payload,
      signal: AbortSignal.timeout(model.firstByteTimeoutMs),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    if (isGatewayError(error)) throw error;
    throw new GatewayError('upstream_unreachable', `The engine's ${TOKENIZE_PATH} could not be reached`, {
      cause: error,
    });
  }
  if (status >= 400) {
    // The engine refused the conversation (its template, a tool schema): the caller's request to fix.
    const code = status < 500 ? 'invalid_request' : 'upstream_unreachable';
    throw new GatewayError(code, `The engine's ${TOKENIZE_PATH} answered HTTP ${status}: ${engineMessage(text)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const count = isObj(parsed) ? parsed.count : undefined;
  if (typeof count !== 'number' || !Number.isInteger(count)) {
    throw new GatewayError('upstream_unreachable', `The engine's ${TOKENIZE_PATH} answer has no token count`);
  }
  return { input_tokens: count };
}
