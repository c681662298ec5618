// The IPC side of a proxy process started by bench/proxy.ts (the gateway and the floor): answers `stats` with the
// process's own CPU time, RSS and event-loop delay since the last `reset`, so every cell reads what its load caused.
// The delay histogram runs at 1 ms resolution: a synchronous store commit or WAL checkpoint shows as its max.
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export interface ChildStats {
  readonly cpuMs: number;
  readonly rss: number;
  /** Event-loop delay since the last reset, in ms. */
  readonly loopDelayMaxMs: number;
  readonly loopDelayP99Ms: number;
  /** The longest garbage-collection pause since the last reset, in ms: a loop delay this long may be GC's. */
  readonly gcPauseMaxMs: number;
}

const NS_PER_MS = 1e6;

/** Installs the `stats` / `reset` / `close` handlers; `close` runs `onClose` and exits. */
export function answerStats(onClose: () => Promise<void>): void {
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  let gcPauseMaxMs = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauseMaxMs = Math.max(gcPauseMaxMs, entry.duration);
  }).observe({ entryTypes: ['gc'] });
  process.on('message', (message: unknown) => {
    if (message === 'reset') {
      loopDelay.reset();
      gcPauseMaxMs = 0;
      process.send?.('reset');
    } else if (message === 'stats') {
      const cpu = process.cpuUsage();
      const stats: ChildStats = {
        cpuMs: (cpu.user + cpu.system) / 1000,
        rss: process.memoryUsage().rss,
        loopDelayMaxMs: loopDelay.max / NS_PER_MS,
        loopDelayP99Ms: loopDelay.percentile(99) / NS_PER_MS,
        gcPauseMaxMs,
      };
      process.send?.(stats);
    } else if (message === 'close') {
      void onClose().then(() => process.exit(0));
    }
  });
}
