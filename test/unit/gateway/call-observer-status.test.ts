// rollgate_requests_total: `status` is always an HTTP status and `outcome` says what ended the call, so a
// dashboard summing by status never meets a label value like "upstream_timeout".
import { describe, expect, it } from 'vitest';
import { CallObserver } from '../../../src/gateway/engine/call-observer.js';
import { CallRecord, type Outcome } from '../../../src/gateway/recording/call-record.js';
import { silentLogger } from '../../../src/logger.js';
import { GatewayMetrics } from '../../../src/metrics.js';

/** An ended call's record; its outcome and error type are those the attributes name, as record-call.ts sets both. */
function callRecord(attributes: Record<string, unknown>): CallRecord {
  const record = new CallRecord({
    name: 'chat m',
    attribution: null,
    attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'm', ...attributes },
  });
  const errorType = attributes['error.type'];
  record.outcome =
    (attributes['rollgate.stream.status'] as Outcome | undefined) ?? (errorType === undefined ? null : 'error');
  record.errorType = typeof errorType === 'string' ? errorType : null;
  record.endMs = record.startMs + 1;
  return record;
}

async function countedLines(attributes: Record<string, unknown>): Promise<string[]> {
  const metrics = new GatewayMetrics({ defaultMetrics: false });
  new CallObserver({ metrics, logger: silentLogger }).observe(callRecord(attributes));
  return (await metrics.render()).split('\n').filter((line) => line.startsWith('rollgate_requests_total{'));
}

describe('rollgate_requests_total labels', () => {
  it('a backend answer counts its HTTP status, outcome ok', async () => {
    expect(await countedLines({ 'rollgate.upstream.status_code': 200, 'rollgate.stream.status': 'ok' })).toEqual([
      'rollgate_requests_total{route="chat",status="200",model="m",outcome="ok"} 1',
    ]);
  });

  it('a gateway error counts the status it was sent with and its code as the outcome', async () => {
    expect(await countedLines({ 'error.type': 'upstream_timeout' })).toEqual([
      'rollgate_requests_total{route="chat",status="504",model="m",outcome="upstream_timeout"} 1',
    ]);
  });

  it('a stream that broke after its 200 keeps status 200 and says so in the outcome', async () => {
    expect(
      await countedLines({ 'rollgate.upstream.status_code': 200, 'rollgate.stream.status': 'stream_error' }),
    ).toEqual(['rollgate_requests_total{route="chat",status="200",model="m",outcome="stream_error"} 1']);
  });
});
