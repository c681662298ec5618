// Progress for people: on a terminal one live status line redrawn in place, otherwise (CI, log files) one
// plain line per event. Agent output is forwarded line by line with an attempt prefix so concurrent agents
// stay readable. Drawing happens only on events; there is no refresh timer.

import type { AttemptFinishedEvent, AttemptStartedEvent, RunnerObserver, RunnerStats } from './types.js';

export interface ProgressWritable {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  /** Terminal width; the live line is cut to fit, since a wrapped line cannot be redrawn in place. */
  readonly columns?: number;
}

export interface ProgressOptions {
  /** Status lines go here (default: stderr). */
  readonly status: ProgressWritable;
  /** Agent stdout lines go here (default: stdout). */
  readonly output: ProgressWritable;
  /** Live line mode; defaults to `status.isTTY`. */
  readonly isLive?: boolean;
}

export interface ProgressReporter extends RunnerObserver {
  agentLine(attempt: { rolloutId: string; attemptId: string }, line: string, stream: 'stdout' | 'stderr'): void;
  /** Final summary line; further events are ignored. */
  finish(stats: RunnerStats): void;
}

const CLEAR_LINE = '\r\x1b[2K';

export function createProgressReporter(options: ProgressOptions): ProgressReporter {
  const isLive = options.isLive ?? options.status.isTTY === true;
  let last: RunnerStats | null = null;
  let isLiveLineShown = false;
  let isFinished = false;

  const summary = (stats: RunnerStats): string =>
    `running ${stats.running}/${stats.concurrency} | started ${stats.started} | succeeded ${stats.succeeded} | ` +
    `failed ${stats.failed} | timeout ${stats.timedOut}${stats.cancelled > 0 ? ` | cancelled ${stats.cancelled}` : ''}`;

  const hideLive = (): void => {
    if (isLiveLineShown) options.status.write(CLEAR_LINE);
    isLiveLineShown = false;
  };
  const drawLive = (): void => {
    if (!isLive || isFinished || last === null) return;
    const line = `rollgate runner | ${summary(last)}`;
    const width = options.status.columns;
    options.status.write(`${CLEAR_LINE}${width !== undefined && width > 1 ? line.slice(0, width - 1) : line}`);
    isLiveLineShown = true;
  };
  /** In live mode individual events are not printed, except failures, which people need to see. */
  const printLine = (target: ProgressWritable, line: string): void => {
    hideLive();
    target.write(`${line}\n`);
    drawLive();
  };

  return {
    attemptStarted(event: AttemptStartedEvent, stats: RunnerStats) {
      if (isFinished) return;
      last = stats;
      if (isLive) drawLive();
      else printLine(options.status, `started ${event.rolloutId}/${event.attemptId} on ${event.workerId}`);
    },
    attemptFinished(event: AttemptFinishedEvent, stats: RunnerStats) {
      if (isFinished) return;
      last = stats;
      const seconds = (event.durationMs / 1000).toFixed(1);
      const detail = describeDetails(event);
      const line = `${event.status} ${event.rolloutId}/${event.attemptId} in ${seconds}s${detail}`;
      if (!isLive || event.status !== 'succeeded') printLine(options.status, line);
      else drawLive();
    },
    agentLine(attempt, line, stream) {
      const target = stream === 'stdout' ? options.output : options.status;
      printLine(target, `[${attempt.rolloutId}] ${line}`);
    },
    finish(stats: RunnerStats) {
      if (isFinished) return;
      hideLive();
      isFinished = true;
      options.status.write(`rollgate runner stopped | ${summary(stats)}\n`);
    },
  };
}

function describeDetails(event: AttemptFinishedEvent): string {
  const parts: string[] = [];
  const { exit_code: code, signal, reason, error } = event.details;
  if (typeof code === 'number') parts.push(`exit ${code}`);
  if (typeof signal === 'string') parts.push(`signal ${signal}`);
  if (typeof reason === 'string') parts.push(reason);
  if (typeof error === 'string') parts.push(error);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}
