// Errors on the OTLP/HTTP traces route that happen before the route runs (body limit, auth, Host guard): OTLP
// exporters read a google.rpc.Status in the request's encoding, never the OpenAI error body the rest of the
// gateway sends, so docs/input-limits.md's "413 with a google.rpc.Status" holds for the app-wide limit too.
import { createOtlpCodec, type OtlpCodec } from '../src/tracing/otlp-codec.js';

const TRACES_PATH = '/v1/traces';

// google.rpc.Code values; informational, OTLP clients decide by the HTTP status.
function rpcCode(status: number): number {
  if (status === 401) return 16; // UNAUTHENTICATED
  if (status === 403) return 7; // PERMISSION_DENIED
  if (status === 429 || status === 503) return 14; // UNAVAILABLE
  if (status >= 500) return 13; // INTERNAL
  return 3; // INVALID_ARGUMENT
}

let codec: OtlpCodec | undefined;

export function isOtlpTracesPath(path: string): boolean {
  return path === TRACES_PATH;
}

/** The Status body and its content type: JSON for a JSON request, protobuf otherwise (as routes/otlp.ts answers). */
export function otlpErrorBody(options: {
  readonly status: number;
  readonly message: string;
  readonly contentType: string | undefined;
}): {
  body: Uint8Array;
  contentType: string;
} {
  const status = { code: rpcCode(options.status), message: options.message };
  const mediaType = options.contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType === 'application/json') {
    return { body: Buffer.from(JSON.stringify(status), 'utf8'), contentType: 'application/json' };
  }
  codec ??= createOtlpCodec();
  return { body: codec.encodeStatus(status), contentType: 'application/x-protobuf' };
}
