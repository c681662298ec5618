// Progress display for algorithm runs: one line redrawn in place on a terminal, plain milestone lines
// (start, every quarter, end) when the output is a file or a pipe, so logs stay readable.
import type { ProgressReporter } from './types.js';

export interface ProgressOutput {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
}

export interface ProgressOptions {
  readonly output: ProgressOutput;
  /** Prefix of every line, e.g. the algorithm name. */
  readonly name: string;
  /** Defaults to `output.isTTY`. */
  readonly isTTY?: boolean;
  readonly now?: () => number;
  /** Minimum time between redraws on a TTY. */
  readonly redrawMs?: number;
}

const BAR_WIDTH = 24;
const CLEAR_LINE = '\r\x1b[K';

export function createProgressReporter(options: ProgressOptions): ProgressReporter {
  const { output, name } = options;
  const isTTY = options.isTTY ?? output.isTTY === true;
  const now = options.now ?? Date.now;
  const redrawMs = options.redrawMs ?? 100;
  let label: string | null = null;
  let total: number | undefined;
  let done = 0;
  let startedAt = 0;
  let lastDraw = 0;
  let lastQuarter = 0;
  let closed = false;
  let lineShown = false;

  const elapsed = () => `${((now() - startedAt) / 1000).toFixed(1)}s`;
  const line = (): string => {
    if (total === undefined || total === 0) return `${name} ${label} ${done} ${elapsed()}`;
    const filled = Math.round((Math.min(done, total) / total) * BAR_WIDTH);
    return `${name} ${label} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${done}/${total} ${elapsed()}`;
  };
  const draw = (force: boolean) => {
    if (!isTTY || label === null) return;
    const t = now();
    if (!force && t - lastDraw < redrawMs) return;
    lastDraw = t;
    output.write(`${CLEAR_LINE}${line()}`);
    lineShown = true;
  };
  const endPhase = () => {
    if (label === null) return;
    if (isTTY) {
      draw(true);
      output.write('\n');
      lineShown = false;
    } else {
      output.write(`${name} ${label}: done ${done}${total === undefined ? '' : `/${total}`} in ${elapsed()}\n`);
    }
    label = null;
  };

  return {
    phase(nextLabel, nextTotal) {
      if (closed) return;
      endPhase();
      label = nextLabel;
      total = nextTotal;
      done = 0;
      lastQuarter = 0;
      startedAt = now();
      if (isTTY) draw(true);
      else output.write(`${name} ${label}: started${total === undefined ? '' : ` (${total})`}\n`);
    },
    advance(units = 1) {
      if (closed || label === null) return;
      done += units;
      if (isTTY) {
        draw(total !== undefined && done >= total);
        return;
      }
      if (total !== undefined && total > 0) {
        const quarter = Math.floor((Math.min(done, total) / total) * 4);
        if (quarter > lastQuarter && quarter < 4) {
          lastQuarter = quarter;
          output.write(`${name} ${label}: ${done}/${total}\n`);
        }
      }
    },
    note(message) {
      if (closed) return;
      if (isTTY && lineShown) output.write(CLEAR_LINE);
      output.write(`${name} ${message}\n`);
      if (isTTY && label !== null) draw(true);
    },
    close() {
      if (closed) return;
      endPhase();
      closed = true;
    },
  };
}
