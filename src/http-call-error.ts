// Base of the errors raised by rollgate's own HTTP clients (store client, reward poster, token minter).

/** A failed HTTP call: `status` is the response's status, or null when no response came (network, timeout). */
export class HttpCallError extends Error {
  readonly status: number | null;

  constructor(message: string, options: { status: number | null; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'HttpCallError';
    this.status = options.status;
  }
}
