// Progress output: a live line redrawn in place on a terminal, plain lines elsewhere (CI logs).
import { describe, expect, it } from 'vitest';
import { createProgressReporter } from '../../../src/runner/progress.js';
import type { RunnerStats } from '../../../src/runner/types.js';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { isTTY, chunks, write: (chunk: string) => chunks.push(chunk), text: () => chunks.join('') };
}

const started = { rolloutId: 'ro-1', attemptId: 'at-1', workerId: 'w-0', sequenceId: 1 };
const stats = (over: Partial<RunnerStats>): RunnerStats => ({
  concurrency: 2,
  running: 0,
  started: 0,
  succeeded: 0,
  failed: 0,
  timedOut: 0,
  cancelled: 0,
  ...over,
});

describe('progress reporter', () => {
  it('prints one plain line per event when stderr is not a terminal', () => {
    const status = sink(false);
    const output = sink(false);
    const progress = createProgressReporter({ status, output });
    progress.attemptStarted?.(started, stats({ running: 1, started: 1 }));
    progress.agentLine(started, 'hello', 'stdout');
    progress.attemptFinished?.(
      { ...started, status: 'failed', durationMs: 1500, details: { exit_code: 3, signal: null } },
      stats({ started: 1, failed: 1 }),
    );
    progress.finish(stats({ started: 1, failed: 1 }));
    expect(status.text()).not.toContain('\x1b');
    expect(status.text().split('\n')).toEqual([
      'started ro-1/at-1 on w-0',
      'failed ro-1/at-1 in 1.5s (exit 3)',
      'rollgate runner stopped | running 0/2 | started 1 | succeeded 0 | failed 1 | timeout 0',
      '',
    ]);
    expect(output.text()).toBe('[ro-1] hello\n');
  });

  it('redraws one live line on a terminal and prints only failures and agent output above it', () => {
    const status = sink(true);
    const output = sink(true);
    const progress = createProgressReporter({ status, output });
    progress.attemptStarted?.(started, stats({ running: 1, started: 1 }));
    expect(status.chunks.at(-1)).toBe(
      '\r\x1b[2Krollgate runner | running 1/2 | started 1 | succeeded 0 | failed 0 | timeout 0',
    );
    progress.attemptFinished?.(
      { ...started, status: 'succeeded', durationMs: 10, details: { exit_code: 0 } },
      stats({ started: 1, succeeded: 1 }),
    );
    expect(status.text()).not.toContain('succeeded ro-1');
    progress.agentLine(started, 'oops', 'stderr');
    progress.attemptFinished?.(
      { ...started, status: 'timeout', durationMs: 2000, details: { reason: 'timeout', signal: 'SIGTERM' } },
      stats({ started: 2, succeeded: 1, timedOut: 1 }),
    );
    const text = status.text();
    expect(text).toContain('\r\x1b[2K[ro-1] oops\n');
    expect(text).toContain('\r\x1b[2Ktimeout ro-1/at-1 in 2.0s (signal SIGTERM, timeout)\n');
    expect(status.chunks.at(-1)).toContain('timeout 1');
    progress.finish(stats({ started: 2, succeeded: 1, timedOut: 1 }));
    expect(status.chunks.at(-1)).toMatch(/^rollgate runner stopped \|.*\n$/);
  });

  it('cuts the live line to the terminal width so it can be redrawn in place', () => {
    const status = { ...sink(true), columns: 30 };
    const progress = createProgressReporter({ status, output: sink(true) });
    progress.attemptStarted?.(started, stats({ running: 1, started: 1 }));
    expect(status.chunks.at(-1)).toBe('\r\x1b[2Krollgate runner | running 1/2');
  });
});
