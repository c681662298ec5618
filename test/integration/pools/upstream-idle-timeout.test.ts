// A try's idle timeout (models[].timeouts.idleMs): a generation that stops sending is failed once it has been
// silent that long, not after the whole generation-sized first-byte budget (20 minutes, per try). A stream's
// headers come at once from a live engine, so a stream that sends none is failed just as fast. Such a stall counts
// against the backend's health although its /health still answers (the engine loop is stuck, its HTTP server is
// not). Long answers that keep sending, and a non-stream generation that is silent until it is done, still pass.
import { APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Fleet, MODEL, startFleet } from './fleet.js';

const IDLE_MS = 300;
const FAST_RETRY = { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 };
const request = { model: MODEL, messages: [{ role: 'user' as const, content: 'hello' }], max_tokens: 6 };

let fleet: Fleet | null = null;
afterEach(async () => {
  await fleet?.close();
  fleet = null;
});

function start(mock: Parameters<typeof startFleet>[0]['mock']): Promise<Fleet> {
  return startFleet({
    live: 1,
    mock,
    // No active probes: what the test sees is what passive health made of the calls.
    model: { retry: FAST_RETRY, timeouts: { idleMs: IDLE_MS }, health: { intervalMs: 0, recoverAfterMs: 60_000 } },
  });
}

async function backendHealthy(f: Fleet): Promise<string | undefined> {
  const text = await (await fetch(`${f.gw.url}/metrics`)).text();
  return text.split('\n').find((line) => line.startsWith('rollgate_backend_healthy{'));
}

describe('a stalled generation', () => {
  it('fails a stream that stops sending after the idle timeout, and ejects its backend', async () => {
    fleet = await start({ interTokenMs: 5_000 });
    const started = performance.now();
    const stream = await fleet.client(undefined, { maxRetries: 0 }).chat.completions.create({
      ...request,
      stream: true,
    });
    const consume = async () => {
      for await (const _ of stream) void _;
    };
    await expect(consume()).rejects.toBeInstanceOf(APIError);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(await backendHealthy(fleet)).toMatch(/ 0$/);
  });

  it('fails a stream whose headers never come after the idle timeout per try', async () => {
    fleet = await start({});
    fleet.mocks[0]?.setFault('hang');
    const started = performance.now();
    const error = await fleet
      .client(undefined, { maxRetries: 0 })
      .chat.completions.create({ ...request, stream: true })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(504);
    // Two tries of IDLE_MS each, not two tries of the 20-minute first-byte budget.
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});

describe('slow answers that are not stalled', () => {
  it('passes a stream that keeps sending for longer than the idle timeout in all', async () => {
    fleet = await start({ interTokenMs: 100 });
    let text = '';
    const stream = await fleet.client().chat.completions.create({ ...request, stream: true });
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('passes a non-stream generation that is silent for longer than the idle timeout', async () => {
    fleet = await start({ latencyMs: IDLE_MS * 3 });
    const answer = await fleet.client().chat.completions.create(request);
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });
});
