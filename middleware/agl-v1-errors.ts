// Errors on the agent-lightning v1 surface (routes/agl-v1.ts): v1 clients are FastAPI clients and read
// `{"detail": …}`; rollgate keeps its OpenAI-shaped body (its SDK clients read that) and adds `detail` with the
// same message. Rendered by the one error renderer (openai-errors.ts), which asks this file which paths are v1's.
import type { OpenAIErrorBody } from '../src/errors.js';

const V1_PREFIXES = ['/proxy/', '/api/rollouts', '/api/models'] as const;

export function isAglV1Path(path: string): boolean {
  return V1_PREFIXES.some((prefix) => path.startsWith(prefix));
}

export function aglV1ErrorBody(body: OpenAIErrorBody): OpenAIErrorBody & { readonly detail: string } {
  return { ...body, detail: body.error.message };
}
