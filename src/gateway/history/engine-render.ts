// The engine's own rendering of a chat request: POST /tokenize with the messages (vLLM applies the chat template
// exactly as its chat route does, tools and chat_template_kwargs included) gives the prompt ids and the context
// length. Any failure is answered with null: the call then goes to the chat route as sent, where the engine reports
// the same problem to the agent itself.
import type { EventEmitter } from 'node:events';
import type { Backend } from '../pools/model-registry.js';
import { isObj } from './narrow.js';

/** A render is a tokenizer pass; far longer means the engine is stuck, and the chat route is tried instead. */
const RENDER_TIMEOUT_MS = 30_000;

export interface EngineRendering {
  readonly ids: number[];
  readonly maxModelLen: number;
}

/** The server's root: /tokenize is not under /v1. */
function rootPath(backend: Backend): string {
  return backend.basePath.replace(/\/v1$/, '');
}

export async function renderOnEngine(options: {
  readonly backend: Backend;
  readonly body: Readonly<Record<string, unknown>>;
  /** The call's abort signal (the agent went away). */
  readonly abort: EventEmitter;
}): Promise<EngineRendering | null> {
  const { backend } = options;
  const payload = Buffer.from(JSON.stringify(options.body));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(payload.length),
  };
  if (backend.authorization !== null) headers.authorization = backend.authorization;
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  options.abort.once('abort', onAbort);
  const timer = setTimeout(onAbort, RENDER_TIMEOUT_MS);
  timer.unref();
  try {
    const response = await backend.pool.request({
      path: `${rootPath(backend)}/tokenize`,
      method: 'POST',
      headers,
      body: payload,
      signal: controller.signal,
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) return null;
    const parsed: unknown = JSON.parse(text);
    if (!isObj(parsed) || !Array.isArray(parsed.tokens) || typeof parsed.max_model_len !== 'number') return null;
    const ids: number[] = [];
    for (const id of parsed.tokens) {
      if (!Number.isInteger(id)) return null;
      ids.push(id as number);
    }
    return { ids, maxModelLen: parsed.max_model_len };
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
    options.abort.removeListener('abort', onAbort);
  }
}
