// docs/failure-classes.md (8 and 9) at the byte level: the relay forwards untouched events byte-identical (also
// when split across reads), removes `"usage": null` members and consumes the usage chunk only for an
// agent that did not ask for usage, holds back [DONE], and turns garbage or an error event into one
// OpenAI error event.
import { describe, expect, it } from 'vitest';
import { runRelay } from '../../helpers/stream-relay.js';

function run(input: string, options: { clientAskedUsage: boolean; readSize: number }) {
  return runRelay(input, { endpoint: 'completions', ...options });
}

const chunk1 = '{"id":"c","choices":[{"index":0,"text":"hé","token_ids":[1,2]}],"usage":null}';
const chunk2 = '{"id":"c","choices":[{"index":0,"text":"🙂","token_ids":[3],"finish_reason":"stop"}],"usage":null}';
const usage = '{"id":"c","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}';
const stream = `data: ${chunk1}\n\n: keep-alive\n\ndata: ${chunk2}\n\ndata: ${usage}\n\ndata: [DONE]\n\n`;

describe.each([1, 3, 7, 4096])('reads of %i bytes', (readSize) => {
  it('strips usage for an agent that did not ask, byte-exact otherwise', () => {
    const { out, done, failure, capture } = run(stream, { clientAskedUsage: false, readSize });
    expect(out).toBe(
      `data: ${chunk1.replace(',"usage":null', '')}\n\n: keep-alive\n\ndata: ${chunk2.replace(',"usage":null', '')}\n\n`,
    );
    expect(done?.toString()).toBe('data: [DONE]\n\n');
    expect(failure).toBeNull();
    expect(capture.result().usage).toMatchObject({ inputTokens: 2, outputTokens: 3 });
    expect(capture.result().choices[0]?.tokenIds).toEqual([1, 2, 3]);
  });

  it('forwards everything but [DONE] unchanged for an agent that asked for usage', () => {
    const { out, done } = run(stream, { clientAskedUsage: true, readSize });
    expect(out).toBe(stream.replace('data: [DONE]\n\n', ''));
    expect(done).not.toBeNull();
  });

  it('turns garbage into an error and stops forwarding', () => {
    const { out, failure } = run(`data: ${chunk1}\n\nnot an event\n\ndata: ${chunk2}\n\n`, {
      clientAskedUsage: true,
      readSize,
    });
    expect(out).toBe(`data: ${chunk1}\n\n`);
    expect(failure?.error.code).toBe('stream_error');
  });

  it('normalises an upstream error event and reports a stream without [DONE] as an error', () => {
    const failed = run(`data: ${chunk1}\n\ndata: {"error":{"message":"boom","type":"X","code":500}}\n\n`, {
      clientAskedUsage: true,
      readSize,
    });
    expect(failed.failure).toEqual({ error: { message: 'boom', type: 'X', param: null, code: '500' } });
    const truncated = run(`data: ${chunk1}\n\n`, { clientAskedUsage: true, readSize });
    expect(truncated.failure?.error.message).toMatch(/before \[DONE\]/);
  });
});
