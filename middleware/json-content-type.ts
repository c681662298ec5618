// JSON routes take `application/json` bodies only (415 otherwise). A web page may POST `text/plain`,
// form-encoded or multipart bodies anywhere without a CORS preflight; JSON text sent as `text/plain` would
// otherwise be read like any JSON body, so any site the user visits could write to a keyless gateway on their
// machine. `application/json` forces the preflight, which the gateway only grants to server.corsOrigins.
// Requests without a body have nothing to mistype and pass; the OTLP paths check their own types.
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../src/errors.js';
import type { AppEnv } from './env.js';

/** Where bodies are JSON: every API prefix. */
const JSON_PREFIXES = ['/v1/', '/rollout/', '/proxy/', '/api/', '/admin/'];
/** OTLP/HTTP takes protobuf too (routes/otlp.ts); the signals it does not collect answer 501 whatever the type. */
const OTLP_PATHS = new Set(['/v1/traces', '/v1/metrics', '/v1/logs', '/v1/development/profiles']);

/** `application/json` or a `+json` type, any parameters (charset) allowed. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType === undefined) return false;
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

/** A declared body (as the body limit judges it): a non-zero Content-Length, or a chunked one. */
function hasBody(contentLength: string | undefined, transferEncoding: string | undefined): boolean {
  if (transferEncoding !== undefined) return true;
  return contentLength !== undefined && contentLength.trim() !== '0';
}

export function requireJsonContentType(): MiddlewareHandler<AppEnv> {
  return async function jsonContentTypeMiddleware(c, next) {
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return next();
    const path = c.req.path;
    if (OTLP_PATHS.has(path) || !JSON_PREFIXES.some((prefix) => path.startsWith(prefix))) return next();
    if (!hasBody(c.req.header('content-length'), c.req.header('transfer-encoding'))) return next();
    const contentType = c.req.header('content-type');
    if (!isJsonMediaType(contentType)) {
      throw new GatewayError(
        'unsupported_media_type',
        `Request bodies must be sent as application/json (got ${contentType === undefined ? 'no Content-Type' : contentType})`,
        { param: 'content-type' },
      );
    }
    return next();
  };
}
