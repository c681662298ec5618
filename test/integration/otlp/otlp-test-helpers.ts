// Shared by the OTLP tests: the vendored OTLP trace protos, and a URL on which nothing listens.
import { Root } from 'protobufjs';
import { freePort } from '../../helpers/free-port.js';

export const otlpProtoRoot = new Root();
otlpProtoRoot.resolvePath = (_origin, target) => new URL(`../../../proto/${target}`, import.meta.url).pathname;
otlpProtoRoot.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');

export const exportRequestType = otlpProtoRoot.lookupType(
  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
);

/** google.rpc.Status's field numbers, as an OTLP exporter decodes a refusal's protobuf body. */
export const otlpStatusType = Root.fromJSON({
  nested: { Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 } } } },
}).lookupType('Status');

/** A traces URL on a port that was free a moment ago: connections to it are refused. */
export async function closedPortUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}/v1/traces`;
}
