// The n-th span of an attempt as a client posts it to the store API: ids and times follow from n, so a test that
// writes many can tell them apart and find each again after a restart.

export function numberedSpan(options: {
  readonly rid: string;
  readonly aid: string;
  readonly n: number;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
}): Record<string, unknown> {
  const { n } = options;
  return {
    rollout_id: options.rid,
    attempt_id: options.aid,
    trace_id: n.toString(16).padStart(32, '0'),
    span_id: n.toString(16).padStart(16, '0'),
    parent_id: null,
    name: options.name,
    status: { status_code: 'OK' },
    attributes: options.attributes,
    events: [],
    links: [],
    start_time: 1_700_000_000 + n,
    end_time: 1_700_000_001 + n,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}
