// OTLP/HTTP trace ingest, `POST /v1/traces` (docs/observability.md): agent-side spans into the store.
// Binary protobuf and JSON encodings, gzip request bodies, gzip responses when accepted. Unlike every other route,
// failures here answer with a google.rpc.Status body in the request's encoding, because that is what OTLP
// exporters parse (OTLP specification, "Failures"); an OpenAI-shaped error would be noise to them.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { promisify } from 'node:util';
import { gunzip as gunzipCallback, gzip as gzipCallback } from 'node:zlib';
import { Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../middleware/env.js';
import { assertMayWriteRollouts } from '../src/auth/scopes.js';
import { GatewayError, isGatewayError } from '../src/errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../src/json-depth.js';
import { isStoreError } from '../src/store/core/errors.js';
import { REQUEST_LIMITS } from '../src/store/core/request-limits.js';
import { createOtlpCodec, type OtlpCodec } from '../src/tracing/otlp-codec.js';
import type { OtlpIngester, OtlpIngestResult } from '../src/tracing/otlp-ingest.js';
import {
  OTLP_SPANS_PER_SLICE,
  type OtlpSlices,
  rolloutPairsOf,
  sliceJsonExport,
  sliceProtobufExport,
} from '../src/tracing/otlp-slices.js';
import { type OtlpTraceRequest, otlpTraceRequestSchema } from '../src/tracing/otlp-spans.js';

const gunzip = promisify(gunzipCallback);
const gzip = promisify(gzipCallback);

const PROTOBUF = 'application/x-protobuf';
const JSON_TYPE = 'application/json';
// google.rpc.Code values; OTLP clients go by the HTTP status, the code is informational.
const RPC_INVALID_ARGUMENT = 3;
const RPC_PERMISSION_DENIED = 7;
const RPC_UNAVAILABLE = 14;

export interface OtlpRoutesOptions {
  /** Built by the composition root, which shares its counters with /metrics. */
  readonly ingester: OtlpIngester;
  /** Upper bound of a gunzipped body (a small gzip body can expand enormously). */
  readonly maxBodyBytes: number;
  readonly codec?: OtlpCodec;
}

type Encoding = 'protobuf' | 'json';

class OtlpRequestError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
  ) {
    super(message);
  }
}

function encodingOf(contentType: string | undefined): Encoding | null {
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType === PROTOBUF || mediaType === 'application/protobuf') return 'protobuf';
  if (mediaType === JSON_TYPE) return 'json';
  return null;
}

function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

async function readBody(body: ArrayBuffer, contentEncoding: string | undefined, maxBytes: number): Promise<Uint8Array> {
  const coding = contentEncoding?.trim().toLowerCase();
  if (!coding || coding === 'identity') return new Uint8Array(body);
  if (coding !== 'gzip') throw new OtlpRequestError(415, `Unsupported Content-Encoding: ${coding}`);
  try {
    return await gunzip(new Uint8Array(body), { maxOutputLength: maxBytes });
  } catch (error) {
    const tooLarge = error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
    throw tooLarge
      ? new OtlpRequestError(413, `Decompressed body exceeds ${maxBytes} bytes`)
      : new OtlpRequestError(400, 'Body is not valid gzip');
  }
}

function parseBody(bytes: Uint8Array, encoding: Encoding, codec: OtlpCodec): unknown {
  try {
    return encoding === 'protobuf' ? codec.decodeTraceRequest(bytes) : JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (error) {
    const what = encoding === 'protobuf' ? 'protobuf ExportTraceServiceRequest' : 'JSON';
    throw new OtlpRequestError(400, `Body is not a valid ${what}: ${error instanceof Error ? error.message : ''}`);
  }
}

/**
 * The export as requests of a few hundred spans (src/tracing/otlp-slices.ts), each decoded and validated in a turn
 * of its own; all of them before any is stored, so an export with one bad span stores nothing. One over the span
 * limit is refused before it is decoded (protobuf) or validated (JSON).
 */
async function decodeInSlices(bytes: Uint8Array, encoding: Encoding, codec: OtlpCodec): Promise<OtlpTraceRequest[]> {
  const slicing = { perSlice: OTLP_SPANS_PER_SLICE, maxSpans: REQUEST_LIMITS.otlpSpans };
  const cut: OtlpSlices<unknown> =
    encoding === 'protobuf'
      ? sliceProtobufExport(bytes, slicing)
      : sliceJsonExport(parseBody(bytes, encoding, codec), slicing);
  if (cut.spans > REQUEST_LIMITS.otlpSpans) {
    throw new OtlpRequestError(
      413,
      `The export has ${cut.spans} spans; one export may carry at most ${REQUEST_LIMITS.otlpSpans}: send smaller batches`,
    );
  }
  const requests: OtlpTraceRequest[] = [];
  for (const slice of cut.slices) {
    if (requests.length > 0) await nextTurn();
    requests.push(validate(encoding === 'protobuf' ? parseBody(slice as Uint8Array, encoding, codec) : slice));
  }
  return requests;
}

/** The answers of an export's slices as one. */
function mergeResults(results: readonly OtlpIngestResult[]): OtlpIngestResult {
  const reasons = [...new Set(results.map((r) => r.rejectedReason).filter((reason) => reason !== ''))];
  return {
    stored: results.reduce((sum, r) => sum + r.stored, 0),
    rejected: results.reduce((sum, r) => sum + r.rejected, 0),
    rejectedReason: reasons.join('; '),
  };
}

function validate(raw: unknown): OtlpTraceRequest {
  // A 400, never the 503 "retry later" that a store choking on it would give: the batch can never succeed.
  if (exceedsJsonDepth(raw)) throw new OtlpRequestError(400, `Body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const parsed = otlpTraceRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new OtlpRequestError(
      400,
      `Invalid ExportTraceServiceRequest at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

export function createOtlpRoutes(options: OtlpRoutesOptions): Hono<AppEnv> {
  const codec = options.codec ?? createOtlpCodec();
  const { ingester } = options;
  const app = new Hono<AppEnv>();

  app.post('/v1/traces', async (c) => {
    const encoding = encodingOf(c.req.header('content-type'));
    const gzipResponse = acceptsGzip(c.req.header('accept-encoding'));
    const reply = async (status: ContentfulStatusCode, payload: Uint8Array | string, as: Encoding) => {
      let body: Uint8Array = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
      c.header('content-type', as === 'json' ? JSON_TYPE : PROTOBUF);
      if (gzipResponse) {
        body = await gzip(body);
        c.header('content-encoding', 'gzip');
      }
      return c.body(body as Uint8Array<ArrayBuffer>, status);
    };
    const fail = (status: ContentfulStatusCode, message: string, code: number) => {
      const as = encoding ?? 'protobuf';
      return reply(
        status,
        as === 'json' ? JSON.stringify({ code, message }) : codec.encodeStatus({ code, message }),
        as,
      );
    };

    if (encoding === null) {
      return fail(400, `Unsupported Content-Type: expected ${PROTOBUF} or ${JSON_TYPE}`, RPC_INVALID_ARGUMENT);
    }
    try {
      const bytes = await readBody(await c.req.arrayBuffer(), c.req.header('content-encoding'), options.maxBodyBytes);
      const requests = await decodeInSlices(bytes, encoding, codec);
      const principal = c.get('principal');
      // Every rollout the batch names, before anything is registered or written: one foreign span refuses all.
      const authorize = (pairs: Iterable<readonly [string, string]>) =>
        assertMayWriteRollouts(
          principal,
          Array.from(pairs, ([rolloutId, attemptId]) => ({ rolloutId, attemptId })),
        );
      // An export cut into slices is checked whole first; the ingest of each slice checks its own again.
      if (requests.length > 1) {
        for (const [i, request] of requests.entries()) {
          if (i > 0) await nextTurn();
          authorize(rolloutPairsOf(request));
        }
      }
      const results: OtlpIngestResult[] = [];
      for (const request of requests) {
        if (results.length > 0) await nextTurn();
        results.push(await ingester.ingest(request, { authorize }));
      }
      const result = mergeResults(results);
      const partial =
        result.rejected > 0 ? { rejectedSpans: result.rejected, errorMessage: result.rejectedReason } : undefined;
      if (encoding === 'json') {
        const body =
          partial === undefined
            ? {}
            : { partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage } };
        return reply(200, JSON.stringify(body), 'json');
      }
      return reply(200, codec.encodeTraceResponse(partial), 'protobuf');
    } catch (error) {
      if (error instanceof OtlpRequestError) return fail(error.status, error.message, RPC_INVALID_ARGUMENT);
      if (isGatewayError(error) && error.code === 'permission_denied')
        return fail(403, error.message, RPC_PERMISSION_DENIED);
      if (isStoreError(error) && error.code === 'invalid_argument')
        return fail(400, error.message, RPC_INVALID_ARGUMENT);
      // Anything else is on our side (e.g. the database is unreachable): 503 lets the exporter retry later.
      c.get('logger')?.error('otlp ingest failed', {
        requestId: c.get('requestId'),
        err: error instanceof Error ? error.message : String(error),
      });
      return fail(503, 'Span ingest failed; retry later', RPC_UNAVAILABLE);
    }
  });

  const unsupported = (signal: string) => () => {
    throw new GatewayError('not_implemented', `OTLP ${signal} are not collected; only /v1/traces is`);
  };
  app.post('/v1/metrics', unsupported('metrics'));
  app.post('/v1/logs', unsupported('logs'));

  return app;
}
