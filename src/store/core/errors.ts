// Errors a store raises for the caller's mistakes. The REST layer maps `code` to a status
// (not_found -> 404, invalid_argument -> 400, conflict -> 409, evicted -> 410, unavailable -> 503 with a retry
// hint: the storage refused the write, not the caller); anything else is a bug (500).

export const STORE_ERROR_CODES = ['not_found', 'invalid_argument', 'conflict', 'evicted', 'unavailable'] as const;
export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number];

const STORE_ERROR_BRAND = Symbol.for('rollgate.StoreError');

export class StoreError extends Error {
  readonly [STORE_ERROR_BRAND] = true;
  readonly code: StoreErrorCode;
  /** The offending field or id, when there is one (ends up in the OpenAI-shaped error's `param`). */
  readonly param: string | null;

  constructor(code: StoreErrorCode, message: string, options?: { param?: string | null; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'StoreError';
    this.code = code;
    this.param = options?.param ?? null;
  }
}

/** Brand check instead of instanceof, so errors from a second installed copy (plugins) are recognised. */
export function isStoreError(error: unknown): error is StoreError {
  return typeof error === 'object' && error !== null && STORE_ERROR_BRAND in error;
}
