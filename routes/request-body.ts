// Request bodies and query strings for the JSON control routes: one JSON reading and one zod error mapping,
// so every route names the offending field the same way.
import { z } from 'zod';
import { assertJsonDepth } from '../middleware/body-json.js';
import { GatewayError } from '../src/errors.js';
import { ID_RULE, isValidId } from '../src/store/core/ids.js';

/** A rollout or attempt id a client chooses: the store's one rule (src/store/core/ids.ts), as a schema. */
export const idSchema = z.string().refine(isValidId, `expected ${ID_RULE}`);

/**
 * Reads the body as JSON; an empty body is `{}` (every field optional) unless `required`, malformed JSON a 400.
 * The one JSON reading of the control routes (store API, v1, pause), so they refuse bad bodies alike.
 */
export async function readJsonBody(
  c: { req: { text(): Promise<string> } },
  options: { readonly required?: boolean } = {},
): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') {
    if (options.required === true) throw new GatewayError('invalid_json', 'Request body must be a JSON document');
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new GatewayError('invalid_json', `Malformed JSON body: ${reason}`, { cause: error });
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
