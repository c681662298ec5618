// agent-view.ts at the byte level: what counts as injected, how a stream is cut for the agent (injected values
// nulled in place, every other byte as upstream sent it, parser-buffered chunks that only carried ids dropped),
// the fallback for layouts the byte surgery does not read, and whole JSON bodies. The capture sees everything.
import { describe, expect, it } from 'vitest';
import { type AgentViewStrip, agentViewStrip, viewJsonBody } from '../../../src/gateway/request/agent-view.js';
import { runRelay } from '../../helpers/stream-relay.js';

function strip(options: {
  readonly endpoint?: 'chat' | 'completions';
  readonly client?: Record<string, unknown>;
  readonly overrides: Record<string, unknown>;
}): AgentViewStrip | null {
  return agentViewStrip({
    endpoint: options.endpoint ?? 'chat',
    client: options.client ?? {},
    overrides: options.overrides,
    agentView: 'requested',
  });
}

const INJECTED_BOTH = { model: 'agent-name', return_token_ids: null, logprobs: null, stream_options: null };

describe('what counts as injected', () => {
  it.each([
    ['both, the agent asked for neither', 'chat', {}, INJECTED_BOTH, { tokenIds: true, logprobs: true }],
    [
      'ids only, the agent asked for logprobs',
      'chat',
      { logprobs: true },
      { return_token_ids: null },
      { tokenIds: true, logprobs: false },
    ],
    [
      'ids only, the agent sent top_logprobs alone',
      'chat',
      { top_logprobs: 2 },
      { return_token_ids: null, logprobs: null },
      { tokenIds: true, logprobs: false },
    ],
    [
      'both, the agent sent return_token_ids: false and top_logprobs: 0',
      'chat',
      { return_token_ids: false, top_logprobs: 0 },
      { return_token_ids: false, logprobs: null },
      { tokenIds: true, logprobs: true },
    ],
    [
      'ids only, a completions agent asked for 0 alternatives',
      'completions',
      { logprobs: 0 },
      { return_token_ids: null, logprobs: 0 },
      { tokenIds: true, logprobs: false },
    ],
    ['logprobs only (an openai backend)', 'completions', {}, { logprobs: null }, { tokenIds: false, logprobs: true }],
  ] as const)('%s', (_name, endpoint, client, overrides, expected) => {
    expect(strip({ endpoint, client, overrides })).toMatchObject(expected);
  });

  it('is nothing when nothing was injected, for the Responses API, and for a raw pool', () => {
    expect(strip({ overrides: { model: 'agent-name', stream_options: null } })).toBeNull();
    const options = { client: {}, overrides: INJECTED_BOTH } as const;
    expect(agentViewStrip({ ...options, endpoint: 'responses', agentView: 'requested' })).toBeNull();
    expect(agentViewStrip({ ...options, endpoint: 'chat', agentView: 'raw' })).toBeNull();
  });
});

// A vLLM chat stream with return_token_ids and logprobs: the role chunk with the prompt ids, a content chunk, a
// chunk the tool parser held back (empty delta, ids and logprobs only), a comment, the finish chunk, the usage.
const LOGPROBS = '{"content":[{"token":"\\\\","logprob":-9999.0,"bytes":[92],"top_logprobs":[]}]}';
const role =
  '{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null}],"prompt_token_ids":[1,2,3]}';
const content = `{"id":"c","choices":[{"index":0,"delta":{"content":"\\\\"},"logprobs":${LOGPROBS},"token_ids":[92]}]}`;
const buffered = `{"id":"c","choices":[{"index":0,"delta":{},"logprobs":${LOGPROBS},"token_ids":[60]}]}`;
const finish = `{"id":"c","choices":[{"index":0,"delta":{},"logprobs":${LOGPROBS},"finish_reason":"tool_calls","token_ids":[62]}]}`;
const untouched =
  '{"id":"c","choices":[{"index":0,"delta":{"content":"say \\"token_ids\\": [7]"},"logprobs":null,"token_ids":null}]}';
const usage = '{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}';
const stream = [role, content, buffered, untouched, finish, usage]
  .map((data) => `data: ${data}\n\n`)
  .join(': keep-alive\n\n')
  .concat('data: [DONE]\n\n');

describe.each([1, 7, 4096])('a chat stream in reads of %i bytes', (readSize) => {
  it('nulls injected ids and logprobs in place, drops the id-only chunk, keeps every other byte', () => {
    const { out, done, capture } = runRelay(stream, {
      endpoint: 'chat',
      clientAskedUsage: false,
      readSize,
      strip: strip({ overrides: INJECTED_BOTH }),
    });
    const expected = [
      role.replace('[1,2,3]', 'null'),
      content.replace(LOGPROBS, 'null').replace('[92]', 'null'),
      untouched,
      finish.replace(LOGPROBS, 'null').replace('[62]', 'null'),
    ];
    expect(out).toBe(
      `data: ${expected[0]}\n\n: keep-alive\n\ndata: ${expected[1]}\n\n: keep-alive\n\n: keep-alive\n\ndata: ${expected[2]}\n\n: keep-alive\n\ndata: ${expected[3]}\n\n: keep-alive\n\n`,
    );
    expect(done?.toString()).toBe('data: [DONE]\n\n');
    const call = capture.result();
    expect(call.promptTokenIds).toEqual([1, 2, 3]);
    expect(call.choices[0]?.tokenIds).toEqual([92, 60, 62]);
    expect(call.choices[0]?.logprobs).toHaveLength(3);
  });

  it('keeps the agent its own logprobs byte for byte, and the chunks that carry them', () => {
    const { out } = runRelay(stream, {
      endpoint: 'chat',
      clientAskedUsage: true,
      readSize,
      strip: strip({ client: { logprobs: true }, overrides: { return_token_ids: null } }),
    });
    const expected = [
      role.replace('[1,2,3]', 'null'),
      content.replace('"token_ids":[92]', '"token_ids":null'),
      buffered.replace('[60]', 'null'),
    ];
    expect(out).toContain(`data: ${expected[0]}\n\n`);
    expect(out).toContain(`data: ${expected[1]}\n\n`);
    // vLLM sends a parser-buffered chunk whenever logprobs were asked for: the agent's own request has it too.
    expect(out).toContain(`data: ${expected[2]}\n\n`);
    expect(out).toContain(`data: ${untouched}\n\n`);
    expect(out).toContain(`data: ${usage}\n\n`);
    expect(out.match(/-9999\.0/g)).toHaveLength(3);
    expect(out).not.toMatch(/"token_ids":\[/);
  });
});

describe('layouts the byte surgery does not read', () => {
  it('re-serialises a chunk with a space before the colon, or one split over data lines', () => {
    const spaced = '{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"token_ids" : [5]}]}';
    const lines = 'data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"},\ndata: "token_ids":[6]}]}\n\n';
    const { out, capture } = runRelay(`data: ${spaced}\n\n${lines}data: [DONE]\n\n`, {
      endpoint: 'chat',
      clientAskedUsage: true,
      readSize: 4096,
      strip: strip({ overrides: { return_token_ids: null } }),
    });
    const events = out
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => JSON.parse(e.slice('data: '.length)));
    expect(events.map((e) => e.choices[0].token_ids)).toEqual([null, null]);
    expect(events.map((e) => e.choices[0].delta.content)).toEqual(['a', 'b']);
    expect(capture.result().choices[0]?.tokenIds).toEqual([5, 6]);
  });
});

describe('a whole JSON answer', () => {
  const completions = `{"id":"cmpl","choices":[{"index":0,"text":"\\"token_ids\\":","logprobs":{"tokens":["x"],"token_logprobs":[-1.0]},"prompt_token_ids":[1,2],"token_ids":[3]},{"index":1,"text":"y","logprobs":null,"prompt_token_ids":[4],"token_ids":[5]}],"usage":{"prompt_tokens":3}}`;

  it('nulls the injected members in place and leaves the rest as the backend wrote it', () => {
    const bytes = Buffer.from(completions);
    const view = viewJsonBody(
      bytes,
      JSON.parse(completions),
      strip({
        endpoint: 'completions',
        client: { logprobs: 1 },
        overrides: { return_token_ids: null },
      }) as AgentViewStrip,
    );
    expect(view.toString()).toBe(
      completions.replace('[1,2]', 'null').replace('[3]', 'null').replace('[4]', 'null').replace('[5]', 'null'),
    );
  });

  it('is the same buffer when nothing injected holds a value', () => {
    const body =
      '{"id":"x","choices":[{"index":0,"text":"y","logprobs":null,"token_ids":null}],"prompt_token_ids":null}';
    const bytes = Buffer.from(body);
    const view = viewJsonBody(bytes, JSON.parse(body), strip({ overrides: INJECTED_BOTH }) as AgentViewStrip);
    expect(view).toBe(bytes);
  });
});
