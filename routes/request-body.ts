// Request bodies and query strings for the JSON control routes: one JSON reading and one zod error mapping,
// so every route names the offending field the same way (contracts.md §3.8).
import type { z } from 'zod';
import { assertJsonDepth } from '../middleware/body-json.js';
import { GatewayError } from '../src/errors.js';

/** Reads the body as JSON; an empty body is `{}` (every field optional), malformed JSON a 400. */
export async function readJsonBody(c: { req: { text(): Promise<string> } }): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new GatewayError('invalid_json', 'Invalid JSON in request body', { cause: error });
  }
  assertJsonDepth(parsed);
  return parsed;
}

/** Schema violations are 422 naming the field, or the unknown key of a strict object. */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue === undefined ? [] : [...issue.path];
  if (issue?.code === 'unrecognized_keys' && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  const param = path.length > 0 ? path.map(String).join('.') : null;
  const reason = issue?.message ?? 'Invalid request';
  throw new GatewayError('validation_error', param === null ? reason : `${param}: ${reason}`, { param });
}
