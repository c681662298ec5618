import { expect, it } from 'vitest';
import { rewriteBody } from '../../../src/gateway/request/body-rewrite.js';
import { upstreamPayload } from '../../../src/gateway/upstream/upstream-payload.js';

const OPTIONS = {
  endpoint: 'chat',
  backendType: 'vllm',
  upstreamModel: 'm',
  tokenIds: true,
  logprobs: 'always',
  mode: null,
} as const;

function check(rawText: string, options: Partial<Parameters<typeof rewriteBody>[1]> = {}) {
  const raw = Buffer.from(rawText);
  const client = JSON.parse(rawText) as Record<string, unknown>;
  const rewritten = rewriteBody(client, { ...OPTIONS, ...options });
  const payload = upstreamPayload({ client, raw, rewritten });
  expect(JSON.parse(payload.toString('utf8'))).toEqual(rewritten.body);
  return payload;
}

it('sends the client bytes untouched when the rewrite changed nothing', () => {
  const text = ' {"model":"m","return_token_ids":true,"logprobs":true,"messages":[],"x":1.0} \n';
  const raw = Buffer.from(text);
  const client = JSON.parse(text) as Record<string, unknown>;
  const rewritten = rewriteBody(client, OPTIONS);
  expect(rewritten.overrides).toEqual({});
  expect(upstreamPayload({ client, raw, rewritten })).toBe(raw);
});

it('appends added keys to the client bytes, also to an empty object and after trailing whitespace', () => {
  const payload = check('{"model":"m","messages":[{"role":"user","content":"h\\u00e9 }"}],"stream":true}\n\t');
  expect(payload.toString('utf8').startsWith('{"model":"m","messages":[{"role":"user","content":"h\\u00e9 }"}]')).toBe(
    true,
  );
  check('{}', { upstreamModel: 'other' });
  check('  { }  ');
});

it('serialises the whole body when a key the client sent is overridden', () => {
  const payload = check('{"model":"agent-name","messages":[], "logprobs" : false}');
  expect(payload.toString('utf8')).toBe(
    JSON.stringify({ model: 'm', messages: [], logprobs: true, return_token_ids: true }),
  );
});

it('serialises when no raw bytes were kept', () => {
  const client = { model: 'm', messages: [] };
  const rewritten = rewriteBody(client, OPTIONS);
  expect(upstreamPayload({ client, raw: undefined, rewritten }).toString('utf8')).toBe(JSON.stringify(rewritten.body));
});

it('serialises an empty body (parsed as {}) instead of sending nothing', () => {
  const client = {};
  const payload = upstreamPayload({
    client,
    raw: Buffer.alloc(0),
    rewritten: { body: client, overrides: {}, injected: [] },
  });
  expect(payload.toString('utf8')).toBe('{}');
});
