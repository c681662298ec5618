import type { Attributes, Span } from '../../../src/store/core/types.js';

let counter = 0;

export interface SpanOptions {
  seq: number;
  name?: string;
  attributes?: Attributes;
  rolloutId?: string;
  attemptId?: string;
  spanId?: string;
  parentId?: string | null;
  startTime?: number | null;
  statusCode?: 'UNSET' | 'OK' | 'ERROR';
}

export function makeSpan(options: SpanOptions): Span {
  counter += 1;
  const spanId = options.spanId ?? counter.toString(16).padStart(16, '0');
  return {
    rollout_id: options.rolloutId ?? 'ro-test',
    attempt_id: options.attemptId ?? 'at-1',
    sequence_id: options.seq,
    trace_id: 'a'.repeat(32),
    span_id: spanId,
    parent_id: options.parentId ?? null,
    name: options.name ?? 'chat test-model',
    status: { status_code: options.statusCode ?? 'UNSET' },
    attributes: options.attributes ?? {},
    events: [],
    links: [],
    start_time: options.startTime === undefined ? 1000 + options.seq : options.startTime,
    end_time: null,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

/** A canonical rollgate LLM call span. */
export function callSpan(
  seq: number,
  prompt: number[],
  response: number[],
  extra: Attributes & { id?: string } = {},
  options: Partial<SpanOptions> = {},
): Span {
  const { id, ...rest } = extra;
  const attributes: Attributes = {
    prompt_token_ids: prompt,
    response_token_ids: response,
    ...(id === undefined ? {} : { 'gen_ai.response.id': id as string }),
    ...rest,
  };
  return makeSpan({ seq, attributes, ...options });
}

/** A v0.3 reward annotation. */
export function rewardSpan(seq: number, value: number, options: Partial<SpanOptions> = {}): Span {
  return makeSpan({
    seq,
    name: 'agentlightning.annotation',
    attributes: { 'agentlightning.reward.0.name': 'primary', 'agentlightning.reward.0.value': value },
    ...options,
  });
}

/** The legacy LiteLLM proxy pair: litellm_request (no ids) + raw_gen_ai_request child (stringified ids). */
export function rawProxySpan(seq: number, prompt: number[], response: number[], vllmId: string): Span {
  return makeSpan({
    seq,
    name: 'raw_gen_ai_request',
    attributes: {
      'llm.hosted_vllm.prompt_token_ids': `[${prompt.join(', ')}]`,
      'llm.hosted_vllm.response_token_ids': `[[${response.join(', ')}]]`,
      'llm.hosted_vllm.id': vllmId,
    },
  });
}
