// OTLP/HTTP binary encoding for traces: decode ExportTraceServiceRequest, encode ExportTraceServiceResponse and the
// google.rpc.Status body OTLP clients expect on 4xx/5xx. @opentelemetry/otlp-transformer only serialises requests
// and parses responses (the sender's side), so the receiver uses protobufjs with the official .proto files
// vendored under proto/ (see proto/README.md).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Root, type Type } from 'protobufjs';

const SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';
const PACKAGE = 'opentelemetry.proto.collector.trace.v1';

// google/rpc/status.proto without `details` (never sent): field numbers must match the official message.
const STATUS_DESCRIPTOR = {
  nested: {
    google: {
      nested: {
        rpc: {
          nested: {
            Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 } } },
          },
        },
      },
    },
  },
};

export interface OtlpCodec {
  /**
   * The request as a plain object in OTLP/JSON's field naming (lowerCamelCase); ids and bytes stay Uint8Array,
   * 64-bit integers become decimal strings. Throws on bytes that are not a valid message.
   */
  decodeTraceRequest(body: Uint8Array): unknown;
  encodeTraceResponse(partialSuccess?: { rejectedSpans: number; errorMessage: string }): Uint8Array;
  encodeStatus(status: { code: number; message: string }): Uint8Array;
}

/** Where proto/ is from this module, both in src/ (tsx, tests) and in dist/src/ (built). */
function findProtoDir(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  for (const up of ['../..', '../../..']) {
    const candidate = join(here, up, 'proto');
    if (existsSync(join(candidate, SERVICE_PROTO))) return candidate;
  }
  throw new Error(`rollgate: OTLP proto definitions not found near ${here} (expected proto/${SERVICE_PROTO})`);
}

export function createOtlpCodec(options: { protoDir?: string } = {}): OtlpCodec {
  const protoDir = options.protoDir ?? findProtoDir();
  const root = new Root();
  root.resolvePath = (_origin, target) => join(protoDir, target);
  root.loadSync(SERVICE_PROTO);
  const requestType: Type = root.lookupType(`${PACKAGE}.ExportTraceServiceRequest`);
  const responseType: Type = root.lookupType(`${PACKAGE}.ExportTraceServiceResponse`);
  const statusType: Type = Root.fromJSON(STATUS_DESCRIPTOR).lookupType('google.rpc.Status');

  return {
    decodeTraceRequest(body) {
      const message = requestType.decode(body);
      return requestType.toObject(message, { longs: String, enums: Number, arrays: true });
    },
    encodeTraceResponse(partialSuccess) {
      const payload = partialSuccess === undefined ? {} : { partialSuccess };
      return responseType.encode(responseType.fromObject(payload)).finish();
    },
    encodeStatus(status) {
      return statusType.encode(statusType.fromObject(status)).finish();
    },
  };
}
