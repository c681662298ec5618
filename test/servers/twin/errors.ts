// vLLM's two error shapes: its own `{"error": {message, type, param, code: <int>}}` (status = code), and FastAPI's
// `{"detail": ...}` for unknown routes, wrong methods and HTTPExceptions raised by the dev routes. SGLang's
// OpenAI routes answer the flat `{"object": "error", message, type, param, code: <int>}` instead.
import type { TwinDialect } from './types.js';
import { isRecord } from './util.js';

export class VllmError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'BadRequestError',
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** A FastAPI-level error: the body is `{"detail": detail}`. */
export class FastApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export function vllmErrorBody(status: number, message: string, type: string, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code: status } });
}

/** SGLang's ErrorResponse (protocol.py): flat, `object: "error"`, the status as an int `code`. */
export function sglangErrorBody(status: number, message: string, type: string, param: string | null = null): string {
  return JSON.stringify({ object: 'error', message, type, param, code: status });
}

export type ErrorBodyWriter = (status: number, message: string, type: string, param?: string | null) => string;

/** The whole-body error shape of a dialect's generation routes. */
export function errorBodyWriter(dialect: TwinDialect): ErrorBodyWriter {
  return dialect === 'sglang' ? sglangErrorBody : vllmErrorBody;
}

/** A mid-stream error event's data: vLLM writes its body as is; SGLang wraps its flat body in `error`. */
export function streamErrorData(dialect: TwinDialect): ErrorBodyWriter {
  if (dialect === 'vllm') return vllmErrorBody;
  return (status, message, type, param = null) =>
    JSON.stringify({ error: { object: 'error', message, type, param, code: status } });
}

// Request validation in vLLM is pydantic's; its messages start with "1 validation error".
export function optionalInt(body: Record<string, unknown>, key: string, min: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid integer`);
  }
  if (v < min) throw new VllmError(400, `${key} must be at least ${min}, got ${v}.`);
  return v;
}

export function optionalNumber(body: Record<string, unknown>, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid number`);
  }
  return v;
}

export function optionalBool(body: Record<string, unknown>, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') {
    throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid boolean`);
  }
  return v;
}

export function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid string`);
  return v;
}

export function stopStrings(body: Record<string, unknown>): string[] {
  const s = body.stop;
  if (s === undefined || s === null) return [];
  if (typeof s === 'string') return [s];
  if (Array.isArray(s) && s.every((x) => typeof x === 'string')) return s;
  throw new VllmError(400, '1 validation error:\n  stop: Input should be a valid string or list of strings');
}

export function stopTokenIds(body: Record<string, unknown>): number[] {
  const s = body.stop_token_ids;
  if (s === undefined || s === null) return [];
  if (Array.isArray(s) && s.every((x) => typeof x === 'number' && Number.isInteger(x))) return s as number[];
  throw new VllmError(400, '1 validation error:\n  stop_token_ids: Input should be a valid list of integers');
}

/** The JSON body of a dev route; FastAPI answers a body that is not JSON with 400 `{"detail": ...}`. */
export function jsonObjectBody(body: unknown, rawBody: string): Record<string, unknown> {
  if (rawBody.length === 0) return {};
  if (!isRecord(body)) throw new FastApiError(400, 'Invalid JSON format');
  return body;
}
