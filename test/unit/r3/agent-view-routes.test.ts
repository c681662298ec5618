// Routed experts and the agent's view: a capturing pool's routes are nulled in place on vLLM answers (every other
// byte as vLLM sent it), removed from SGLang's sgl_ext, kept for an agent that asked SGLang for them itself, and
// left alone by pools that do not capture; SGLang is asked for them only by a capturing pool.
import { describe, expect, it } from 'vitest';
import { agentViewStrip, viewJsonBody, viewStreamEvent } from '../../../src/gateway/request/agent-view.js';
import { rewriteBody } from '../../../src/gateway/request/body-rewrite.js';

const NPY = 'k05VTVBZAQB2AHsnZGVzY3InOiAnfHUxJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsIDEsIDIpLCB9';

function strip(backendType: 'vllm' | 'sglang', client: Record<string, unknown> = {}, routedExperts = true) {
  return agentViewStrip({
    endpoint: 'chat',
    client,
    overrides: {},
    agentView: 'requested',
    backendType,
    routedExperts,
  });
}

describe('routed experts in the agent view', () => {
  it('nulls vLLM routes in place, prompt rows too, and leaves every other byte', () => {
    const text = `{"id":"c","prompt_routed_experts":[[[1,2]]],"choices":[{"index":0,"message":{"content":"hi"},"token_ids":null,"routed_experts":"${NPY}"}],"usage":{"prompt_tokens":1.0}}`;
    const view = strip('vllm');
    expect(view).not.toBeNull();
    if (view === null) return;
    const out = viewJsonBody(Buffer.from(text), JSON.parse(text), view).toString();
    expect(out).toBe(
      '{"id":"c","prompt_routed_experts":null,"choices":[{"index":0,"message":{"content":"hi"},"token_ids":null,"routed_experts":null}],"usage":{"prompt_tokens":1.0}}',
    );
  });

  it("removes SGLang's sgl_ext routes, keeping the rest of sgl_ext", () => {
    const body = {
      choices: [
        { index: 0, message: { content: 'hi' }, sgl_ext: { routed_experts: 'AAAA' } },
        { index: 1, message: { content: 'ho' }, sgl_ext: { routed_experts: 'AAAA', other: 1 } },
      ],
    };
    const view = strip('sglang');
    if (view === null) throw new Error('no strip');
    const out = JSON.parse(viewJsonBody(Buffer.from(JSON.stringify(body)), body, view).toString());
    expect(out.choices[0]).toEqual({ index: 0, message: { content: 'hi' } });
    expect(out.choices[1].sgl_ext).toEqual({ other: 1 });
  });

  it('takes them out of stream chunks, and drops a chunk that carried nothing else', () => {
    const view = strip('sglang');
    if (view === null) throw new Error('no strip');
    const text = (chunk: object) => Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
    const last = { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], sgl_ext: { routed_experts: 'AAAA' } };
    const out = viewStreamEvent({ event: text(last), chunk: last, isOneDataLine: true, strip: view });
    expect(out?.toString()).toBe(`data: ${JSON.stringify({ choices: last.choices })}\n\n`);
    const only = { choices: [{ index: 0, delta: {}, sgl_ext: { routed_experts: 'AAAA' } }] };
    expect(viewStreamEvent({ event: text(only), chunk: only, isOneDataLine: true, strip: view })).toBeNull();
    const plain = { choices: [{ index: 0, delta: { content: 'x' } }] };
    const event = text(plain);
    expect(viewStreamEvent({ event, chunk: plain, isOneDataLine: true, strip: view })).toBe(event);
  });

  it('keeps them for an agent that asked SGLang itself, and for pools that do not capture', () => {
    expect(strip('sglang', { return_routed_experts: true })).toBeNull();
    expect(strip('vllm', {}, false)).toBeNull();
  });

  it('asks SGLang (not vLLM) per request, only for a capturing pool, as an override', () => {
    const base = {
      endpoint: 'chat' as const,
      upstreamModel: null,
      tokenIds: true,
      logprobs: 'off' as const,
      mode: null,
    };
    const sglang = rewriteBody({ messages: [] }, { ...base, backendType: 'sglang', routedExperts: true });
    expect(sglang.body.return_routed_experts).toBe(true);
    expect(sglang.overrides).toHaveProperty('return_routed_experts', null);
    const vllm = rewriteBody({ messages: [] }, { ...base, backendType: 'vllm', routedExperts: true });
    expect(vllm.body).not.toHaveProperty('return_routed_experts');
    const off = rewriteBody({ messages: [] }, { ...base, backendType: 'sglang' });
    expect(off.body).not.toHaveProperty('return_routed_experts');
  });
});
