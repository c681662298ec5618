// Upstream errors as OpenAI-shaped bodies (docs/gateway.md, docs/failure-classes.md#17). vLLM sends `code` as the
// HTTP status (an int); openai-node types it as a string, so it becomes one. Non-JSON bodies are not
// touched here: the caller passes them through with their status and content type.
import { type OpenAIErrorBody, openAIErrorBody } from '../../errors.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const FALLBACK_TYPE = 'upstream_error';

function codeString(code: unknown): string | null {
  if (typeof code === 'string') return code;
  if (typeof code === 'number' && Number.isFinite(code)) return String(code);
  return null;
}

/** An `error` member (object or bare message) as the OpenAI error body. */
export function normaliseErrorMember(error: unknown, fallbackMessage: string): OpenAIErrorBody {
  if (typeof error === 'string') return openAIErrorBody({ message: error, type: FALLBACK_TYPE });
  if (!isObj(error)) return openAIErrorBody({ message: fallbackMessage, type: FALLBACK_TYPE });
  return openAIErrorBody({
    message: typeof error.message === 'string' ? error.message : fallbackMessage,
    type: typeof error.type === 'string' ? error.type : FALLBACK_TYPE,
    param: typeof error.param === 'string' ? error.param : null,
    code: codeString(error.code),
  });
}

/** Any JSON error body (OpenAI, vLLM, SGLang's flat one, FastAPI `{detail}`) as the OpenAI shape. */
export function normaliseErrorJson(parsed: unknown, status: number): OpenAIErrorBody {
  const fallback = `Upstream returned HTTP ${status}`;
  if (isObj(parsed)) {
    if ('error' in parsed) return normaliseErrorMember(parsed.error, fallback);
    // SGLang's ErrorResponse: `{object: "error", message, type, param, code: <int>}` at the top level.
    if (parsed.object === 'error') return normaliseErrorMember(parsed, fallback);
    if (typeof parsed.detail === 'string') return openAIErrorBody({ message: parsed.detail, type: FALLBACK_TYPE });
    if (typeof parsed.message === 'string') {
      return openAIErrorBody({ message: parsed.message, type: FALLBACK_TYPE, code: codeString(parsed.code) });
    }
  }
  return openAIErrorBody({ message: fallback, type: FALLBACK_TYPE, code: String(status) });
}

/** `error.type` on the span: the provider's code when it has one, else its type, else `_OTHER`. */
export function errorTypeOf(body: OpenAIErrorBody): string {
  return body.error.code ?? body.error.type ?? '_OTHER';
}
