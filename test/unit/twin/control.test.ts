// vLLM's dev routes for weight swaps: /pause (abort | wait | keep), /resume, /abort_requests, /sleep, /wake_up.
// An aborted request ends like a complete one (finish_reason "abort", then [DONE]); keep freezes generations and
// resumes them under whatever weights are loaded by then.
import { describe, expect, it } from 'vitest';
import { type AnyRecord, chat, chatStream, collect, streamedIds, twinsPerTest } from './harness.js';

const twin = twinsPerTest({ interTokenMs: 15 });

const words = (w: string, n: number) => `${w} `.repeat(n).trimEnd();

describe('/pause?mode=abort', () => {
  it('ends an in-flight stream with finish_reason abort and a clean [DONE]', async () => {
    const h = await twin({ respond: () => words('word', 60) });
    const res = fetch(`${h.twin.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chatStream({ return_token_ids: true, stream_options: { include_usage: true } })),
    });
    await h.twin.waitFor((r) => r.tokensSent >= 5);
    const paused = await h.post('/pause');
    expect(paused.body).toEqual({ status: 'paused' });
    const raw = await (await res).text();
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = raw
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    const last = events.at(-2)!;
    expect(last.choices[0]).toMatchObject({ finish_reason: 'abort', delta: {} });
    const usage = events.at(-1)!.usage;
    const ids = streamedIds(events);
    expect(ids.length).toBe(usage.completion_tokens);
    expect(ids.length).toBeLessThan(100);
    expect((await h.get('/is_paused')).body).toEqual({ is_paused: true });
    const entry = h.twin.ledger.last()!;
    expect(entry).toMatchObject({ status: 'aborted', finishReason: 'abort' });
    expect(entry.tokenIds).toEqual(ids);
  });

  it('answers an in-flight non-stream request 200 with the partial tokens', async () => {
    const h = await twin({ respond: () => words('word', 60), paceNonStream: true });
    const pending = h.client.chat.completions.create(chat({ return_token_ids: true }));
    await h.twin.waitFor((r) => r.tokensGenerated >= 5);
    await h.post('/pause?mode=abort');
    const res = (await pending) as unknown as AnyRecord;
    expect(res.choices[0].finish_reason).toBe('abort');
    expect(res.choices[0].token_ids.length).toBeGreaterThan(0);
    expect(res.choices[0].token_ids.length).toBeLessThan(100);
    expect(res.choices[0].message.content).toBe(words('word', 60).slice(0, res.choices[0].token_ids.length));
  });

  it('makes new requests wait until /resume', async () => {
    const h = await twin({});
    await h.post('/pause');
    let done = false;
    const pending = h.client.chat.completions.create(chat({})).then((r) => {
      done = true;
      return r;
    });
    await h.twin.waitFor((r) => r.path === '/v1/chat/completions');
    await new Promise((r) => setTimeout(r, 80));
    expect(done).toBe(false);
    expect((await h.post('/resume')).body).toEqual({ status: 'resumed' });
    expect((await pending).choices[0]!.finish_reason).toBe('stop');
  });
});

describe('/pause?mode=keep', () => {
  it('freezes a stream and resumes it where it was, under the weights loaded meanwhile', async () => {
    const h = await twin({ respond: (_p, ctx) => words(ctx.weights.base === 0 ? 'old' : 'new', 15) });
    const stream = h.client.chat.completions.create(chatStream({ return_token_ids: true }));
    const rec = await h.twin.waitFor((r) => r.tokensSent >= 6);
    await h.post('/pause?mode=keep');
    const frozenAt = rec.tokensSent;
    await new Promise((r) => setTimeout(r, 120));
    expect(rec.tokensSent - frozenAt).toBeLessThanOrEqual(1);
    await h.post('/update_weights', { update_info: { names: ['w'] } });
    await h.post('/finish_weight_update', { weight_version: 'v1' });
    await h.post('/resume');
    const chunks = (await collect(await stream)) as unknown as AnyRecord[];
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    const entry = h.twin.ledger.last()!;
    const bases = entry.weights.map((w) => w.base);
    const switchAt = bases.indexOf(1);
    expect(switchAt).toBeGreaterThanOrEqual(frozenAt);
    // chars mode: one token per character, so the text is the old answer up to the swap, then the new one.
    expect(text).toBe(words('old', 15).slice(0, switchAt) + words('new', 15).slice(switchAt));
    expect(bases.slice(0, switchAt).every((b) => b === 0)).toBe(true);
    expect(bases.slice(switchAt).every((b) => b === 1)).toBe(true);
    expect(entry.weights.at(-1)!.label).toBe('v1');
    expect(streamedIds(chunks)).toEqual(entry.tokenIds);
    expect((await h.get('/weight_info')).body).toEqual({ weight_version: 'v1' });
  });
});

describe('/pause?mode=wait and /abort_requests', () => {
  it('wait returns once in-flight requests finished normally', async () => {
    const h = await twin({ respond: () => words('w', 12) });
    const stream = h.client.chat.completions.create(chatStream({}));
    await h.twin.waitFor((r) => r.tokensSent >= 2);
    await h.post('/pause?mode=wait');
    expect(h.twin.ledger.last()).toMatchObject({ status: 'finished', finishReason: 'stop' });
    const chunks = (await collect(await stream)) as unknown as AnyRecord[];
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  it('abort_requests aborts the named request only', async () => {
    const h = await twin({ respond: () => words('w', 20) });
    const a = h.client.chat.completions.create(chatStream({}), { headers: { 'x-request-id': 'req-a' } });
    const b = h.client.chat.completions.create(chatStream({}), { headers: { 'x-request-id': 'req-b' } });
    await h.twin.waitFor((r) => r.headers['x-request-id'] === 'req-b' && r.tokensSent >= 2);
    expect((await h.post('/abort_requests', { request_ids: ['chatcmpl-req-a'] })).body).toEqual({
      status: 'aborted',
      aborted: 1,
    });
    const [ca, cb] = (await Promise.all([collect(await a), collect(await b)])) as unknown as AnyRecord[][];
    expect(ca!.at(-1)!.choices[0].finish_reason).toBe('abort');
    expect(cb!.at(-1)!.choices[0].finish_reason).toBe('stop');
    expect(ca![0]!.id).toBe('chatcmpl-req-a');
    const bad = await h.post('/abort_requests');
    expect(bad).toMatchObject({ status: 400, body: { detail: 'Invalid JSON format' } });
  });
});

describe('a client that goes away', () => {
  it('aborts its generation and frees its slot', async () => {
    const h = await twin({ respond: () => words('w', 40) });
    const controller = new AbortController();
    const stream = await h.client.chat.completions.create(chatStream({}), { signal: controller.signal });
    await h.twin.waitFor((r) => r.tokensSent >= 3);
    controller.abort();
    await collect(stream).catch(() => undefined);
    await h.twin.waitFor((r) => r.abortedAt !== undefined);
    // mode=wait returns only once nothing is in flight.
    await h.post('/pause?mode=wait');
    const entry = h.twin.ledger.last()!;
    expect(entry).toMatchObject({ status: 'aborted', finishReason: 'abort', clientDisconnected: true });
    expect(entry.tokenIds.length).toBeLessThan(79);
  });
});

describe('/sleep and /wake_up', () => {
  it('aborts in-flight work, reports sleeping, and serves again after waking', async () => {
    const h = await twin({ respond: () => words('w', 40) });
    const stream = h.client.chat.completions.create(chatStream({}));
    await h.twin.waitFor((r) => r.tokensSent >= 2);
    expect((await h.post('/sleep?level=1')).status).toBe(200);
    expect((await h.get('/is_sleeping')).body).toEqual({ is_sleeping: true });
    const chunks = (await collect(await stream)) as unknown as AnyRecord[];
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('abort');
    await h.post('/wake_up?tags=weights');
    expect((await h.get('/is_sleeping')).body).toEqual({ is_sleeping: true });
    await h.post('/wake_up?tags=kv_cache');
    expect((await h.get('/is_sleeping')).body).toEqual({ is_sleeping: false });
    expect((await h.client.chat.completions.create(chat({ max_tokens: 3 }))).choices[0]!.finish_reason).toBe('length');
  });
});

describe('errors', () => {
  it('uses FastAPI shapes for routes and vLLM shapes for requests', async () => {
    const h = await twin({});
    expect(await h.get('/nope')).toEqual({ status: 404, body: { detail: 'Not Found' } });
    expect(await h.get('/pause')).toEqual({ status: 405, body: { detail: 'Method Not Allowed' } });
    const missing = await h.post('/update_weights', {});
    expect(missing).toMatchObject({ status: 400, body: { detail: "Missing 'update_info' in request body" } });
    const badMode = await h.post('/pause?mode=later');
    expect(badMode.status).toBe(400);
    expect(badMode.body.error).toMatchObject({ type: 'BadRequestError', code: 400 });
  });
});
