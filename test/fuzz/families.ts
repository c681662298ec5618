// The valid requests each route family's fuzzing starts from: the same shapes the integration tests send.
import { exportRequestType } from '../integration/otlp/otlp-test-helpers.js';
import type { Family, FuzzContext } from './harness.js';
import type { Json, SeedRequest } from './mutate.js';

const MODEL = 'mock-model';
const messages: Json = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'What is 2+2?' },
];
const tools: Json = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'adds',
      parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
    },
  },
];

function post(name: string, path: string, json: Json, extra: Partial<SeedRequest> = {}): SeedRequest {
  return { name, method: 'POST', path, json, ...extra };
}

function get(
  name: string,
  path: string,
  query: Record<string, string> = {},
  extra: Partial<SeedRequest> = {},
): SeedRequest {
  return { name, method: 'GET', path, query, ...extra };
}

function spanBody(ctx: FuzzContext, n: number): Json {
  return {
    rollout_id: ctx.rid,
    attempt_id: ctx.aid,
    trace_id: n.toString(16).padStart(32, '0'),
    span_id: n.toString(16).padStart(16, '0'),
    parent_id: null,
    name: `chat m-${n}`,
    status: { status_code: 'OK', description: null },
    attributes: { 'gen_ai.request.model': 'm', prompt_token_ids: [n, n + 1], 'x.flag': true },
    events: [{ name: 'e', attributes: { k: 'v' }, timestamp: 1_700_000_000 }],
    links: [],
    start_time: 1_700_000_000 + n,
    end_time: 1_700_000_001 + n,
    context: {
      trace_id: n.toString(16).padStart(32, '0'),
      span_id: n.toString(16).padStart(16, '0'),
      is_remote: false,
      trace_state: {},
    },
    parent: null,
    resource: { attributes: { 'service.name': 'fuzz' }, schema_url: '' },
  };
}

function otlpRequest(ctx: FuzzContext): Json {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'agentlightning.rollout_id', value: { stringValue: ctx.rid } }] },
        scopeSpans: [
          {
            scope: { name: 'agent', version: '1' },
            spans: [
              {
                traceId: '5B8EFFF798038103D269B633813FC60C',
                spanId: 'EEE19B7EC3C1B174',
                parentSpanId: '',
                name: 'tool call',
                kind: 1,
                startTimeUnixNano: '1544712660000000000',
                endTimeUnixNano: '1544712661000000000',
                attributes: [
                  { key: 'agentlightning.attempt_id', value: { stringValue: ctx.aid } },
                  { key: 'n', value: { intValue: '7' } },
                  { key: 'f', value: { doubleValue: 1.5 } },
                  { key: 'arr', value: { arrayValue: { values: [{ stringValue: 'a' }, { boolValue: true }] } } },
                  { key: 'nested', value: { kvlistValue: { values: [{ key: 'k', value: { intValue: 1 } }] } } },
                ],
                events: [{ timeUnixNano: '1544712660500000000', name: 'ev', attributes: [] }],
                status: { code: 1, message: '' },
              },
            ],
          },
        ],
      },
    ],
  };
}

export const FAMILIES: readonly Family[] = [
  {
    name: 'openai-chat',
    seeds: (ctx) => [
      post('chat', '/v1/chat/completions', { model: MODEL, messages, max_tokens: 8, temperature: 0.5 }),
      post('chat-stream', '/v1/chat/completions', {
        model: MODEL,
        messages,
        max_tokens: 8,
        stream: true,
        stream_options: { include_usage: true },
      }),
      post('chat-tools', '/v1/chat/completions', {
        model: MODEL,
        messages,
        tools,
        tool_choice: 'auto',
        logprobs: true,
        top_logprobs: 2,
        max_tokens: 8,
      }),
      post('chat-attributed', `/rollout/${ctx.rid}/attempt/${ctx.aid}/v1/chat/completions`, {
        model: MODEL,
        messages: [...(messages as Json[]), { role: 'assistant', content: '4' }, { role: 'user', content: 'again' }],
        max_tokens: 4,
        n: 1,
        stop: ['\n'],
        seed: 3,
      }),
      get('models', '/v1/models'),
    ],
  },
  {
    name: 'openai-completions',
    seeds: (ctx) => [
      post('completions', '/v1/completions', { model: MODEL, prompt: 'Once upon', max_tokens: 8, logprobs: 1 }),
      post('completions-ids', '/v1/completions', { model: MODEL, prompt: [1, 2, 3, 4], max_tokens: 4, echo: true }),
      post('completions-multi', '/v1/completions', { model: MODEL, prompt: ['a', 'b'], max_tokens: 2 }),
      post('completions-stream', `/rollout/${ctx.rid}/attempt/${ctx.aid}/v1/completions`, {
        model: MODEL,
        prompt: 'Stream me',
        max_tokens: 6,
        stream: true,
      }),
    ],
  },
  {
    name: 'openai-responses',
    seeds: (ctx) => [
      post('responses', '/v1/responses', { model: MODEL, input: 'Say hi', max_output_tokens: 8 }),
      post('responses-items', `/rollout/${ctx.rid}/attempt/${ctx.aid}/v1/responses`, {
        model: MODEL,
        instructions: 'Be brief.',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'Hello' }] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
          { role: 'user', content: 'And?' },
        ],
        tools: [{ type: 'function', name: 'add', parameters: { type: 'object', properties: {} } }],
        max_output_tokens: 8,
      }),
      post('responses-stream', '/v1/responses', { model: MODEL, input: 'Stream', stream: true, max_output_tokens: 6 }),
    ],
  },
  {
    name: 'anthropic-messages',
    seeds: (ctx) => [
      post(
        'messages',
        '/v1/messages',
        { model: MODEL, max_tokens: 8, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] },
        { headers: { 'anthropic-version': '2023-06-01' } },
      ),
      post('messages-stream', `/rollout/${ctx.rid}/attempt/${ctx.aid}/v1/messages`, {
        model: MODEL,
        max_tokens: 8,
        stream: true,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Use the tool' }] },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 1 } }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '1' }] },
        ],
        tools: [
          { name: 'add', description: 'adds', input_schema: { type: 'object', properties: { a: { type: 'number' } } } },
        ],
      }),
      post('count-tokens', '/v1/messages/count_tokens', {
        model: MODEL,
        messages: [{ role: 'user', content: 'count' }],
      }),
    ],
  },
  {
    name: 'store-api',
    seeds: (ctx) => [
      post('enqueue', '/v1/agl/queues/rollouts/enqueue', {
        rollouts: [
          { input: { q: 1 }, mode: 'train', metadata: { a: 1 }, config: { max_attempts: 2, timeout_seconds: 30 } },
        ],
      }),
      post(
        'dequeue',
        '/v1/agl/queues/rollouts/dequeue',
        { limit: 1, worker_id: 'w1', wait_ms: 0 },
        { frozenKeys: ['wait_ms'] },
      ),
      post('start-rollout', '/v1/agl/rollouts', { input: 'x', mode: 'val', worker_id: 'w2' }),
      post('update-rollout', `/v1/agl/rollouts/${ctx.rid}`, { metadata: { tag: 'u' }, mode: 'train' }),
      post('start-attempt', `/v1/agl/rollouts/${ctx.rid}/attempts`, { worker_id: 'w3' }),
      post('update-attempt', `/v1/agl/rollouts/${ctx.rid}/attempts/${ctx.aid}`, {
        last_heartbeat_time: 1_700_000_000,
        metadata: { k: 1 },
      }),
      post('reward', `/v1/agl/rollouts/${ctx.rid}/attempts/${ctx.aid}/reward`, { value: 0.5, name: 'r' }),
      post('span', '/v1/agl/spans', spanBody(ctx, 77)),
      post('spans-search', '/v1/agl/spans/search', { rollout_id: ctx.rid, limit: 5, offset: 0 }),
      post('spans-next', '/v1/agl/spans/next', { rollout_id: ctx.rid, attempt_id: ctx.aid }),
      post('rollouts-search', '/v1/agl/rollouts/search', {
        status_in: ['running', 'queuing'],
        limit: 3,
        sort_by: 'start_time',
      }),
      post('attempts-search', `/v1/agl/rollouts/${ctx.rid}/attempts/search`, { limit: 2 }),
      post('worker', '/v1/agl/workers/w9', { heartbeat_stats: { gpu: 0.5 } }),
      post('resources', '/v1/agl/resources', {
        main: { resource_type: 'llm', endpoint: 'http://127.0.0.1:1/v1', model: 'm', sampling_parameters: { t: 1 } },
        tpl: { resource_type: 'prompt_template', template: 'Hi {x}', engine: 'f-string' },
      }),
      post('wait', '/v1/agl/waits/rollouts', { rollout_ids: [ctx.rid], timeout: 0.01 }, { frozenKeys: ['timeout'] }),
      get('rollouts', '/v1/agl/rollouts', { limit: '3', offset: '0', sort_order: 'desc' }),
      get('rollout', `/v1/agl/rollouts/${ctx.rid}`),
      get('attempts-latest', `/v1/agl/rollouts/${ctx.rid}/attempts/latest`),
      get('spans', '/v1/agl/spans', { rollout_id: ctx.rid, limit: '2' }),
      get('workers', '/v1/agl/workers', { limit: '2' }),
      get('statistics', '/v1/agl/statistics'),
      get('resources-latest', '/v1/agl/resources/latest'),
    ],
  },
  {
    name: 'agl-v1',
    seeds: (ctx) => [
      post('create', '/api/rollouts', [{ input: { p: 1 }, is_train: true, config: { c: 1 }, metadata: { m: 1 } }]),
      {
        name: 'patch',
        method: 'PATCH',
        path: `/api/rollouts/${ctx.rid}`,
        json: { status: { state: 'running', k8s_job_name: 'job', error_message: null } },
      },
      post('event', `/api/rollouts/${ctx.rid}/attempt/${ctx.aid}/events`, { event_type: 'reward', data: { value: 1 } }),
      post('models', '/api/models', [{ model: MODEL, endpoint: ctx.twin.url, version: 1 }]),
      post('pause', '/proxy/pause', { retry_after_seconds: 0, reason: 'fuzz' }),
      post('resume', '/proxy/resume', {}),
      post('proxy-chat', `/proxy/rollout/${ctx.rid}/attempt/${ctx.aid}/mode/train/openai/v1/chat/completions`, {
        model: MODEL,
        messages,
        max_tokens: 4,
      }),
      get('list', '/api/rollouts', { state_in: 'running', limit: '5' }),
      get('terminal', '/api/rollouts/terminal', { after: '0', limit: '5' }),
      get('events', `/api/rollouts/${ctx.rid}/events`, { event_type: 'reward' }),
      get('one', `/api/rollouts/${ctx.rid}`),
      get('state', '/proxy/state'),
    ],
  },
  {
    name: 'admin',
    seeds: (ctx) => [
      post('pause', '/admin/pause', { retry_after_seconds: 1, reason: 'fuzz' }),
      post('resume', '/admin/resume', {}),
      post('drain', '/admin/drain', { timeout_seconds: 0.01 }, { frozenKeys: ['timeout_seconds'] }),
      {
        name: 'replace',
        method: 'PUT',
        path: `/admin/pools/${MODEL}`,
        json: { version: 2, backends: [{ url: ctx.twin.url, type: 'vllm' }] },
      },
      post('draining', `/admin/pools/${MODEL}/draining`, { url: ctx.twin.url, draining: false }),
      post(
        'backend-drain',
        `/admin/pools/${MODEL}/drain`,
        { url: ctx.twin.url, timeout_seconds: 0.01 },
        { frozenKeys: ['timeout_seconds'] },
      ),
      post('agent-token', '/admin/agent-tokens', { rollout_id: ctx.rid }),
      get('state', '/admin/state'),
      get('pools', '/admin/pools'),
      get('ready', '/ready'),
    ],
  },
  {
    name: 'rl',
    seeds: () => [
      post('weights', '/v1/rl/weights', { version: 1, lora_path: '/tmp/x', batch_ids: ['b1'] }),
      post('prepare', '/v1/rl/weights/prepare', { version: 2, batch_ids: ['b1'] }),
      post('commit', '/v1/rl/weights/commit', { version: 2 }),
      post('abort', '/v1/rl/weights/abort', { reason: 'fuzz' }),
      { name: 'ack', method: 'POST', path: '/v1/rl/batches/b1/ack' },
      get('next', '/v1/rl/batches/next', { timeout_s: '0' }, { frozenKeys: ['timeout_s'] }),
      get('schema', '/v1/rl/schema'),
      get('state', '/v1/rl/state'),
    ],
  },
  {
    name: 'otlp-json',
    seeds: (ctx) => [post('traces-json', '/v1/traces', otlpRequest(ctx))],
  },
  {
    name: 'otlp-protobuf',
    seeds: (ctx) => {
      // protobufjs reads `bytes` fields from base64 in plain objects; OTLP/JSON writes them as hex.
      const hexToBase64 = (_key: string, value: unknown) =>
        typeof value === 'string' && /^[0-9A-F]{16,32}$/.test(value)
          ? Buffer.from(value, 'hex').toString('base64')
          : value;
      const plain = JSON.parse(JSON.stringify(otlpRequest(ctx)), hexToBase64) as Record<string, unknown>;
      const message = exportRequestType.fromObject(plain);
      const bytes = exportRequestType.encode(message).finish();
      return [
        { name: 'traces-proto', method: 'POST', path: '/v1/traces', bytes, contentType: 'application/x-protobuf' },
      ];
    },
  },
];
