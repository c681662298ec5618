// The parent side of bench/idle-probe.ts: starts the do-nothing process and reads its event-loop delay.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { ChildStats } from './proxy-child-stats.js';

export interface IdleProbe {
  /** Starts a new measuring window. */
  reset(): Promise<void>;
  /** The probe's worst event-loop delay since the last reset (ms). */
  maxDelayMs(): Promise<number>;
  close(): void;
}

function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise<T>((resolve) => {
    child.once('message', (answer) => resolve(answer as T));
    child.send(message);
  });
}

export async function startIdleProbe(): Promise<IdleProbe> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'idle-probe.ts')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // The first answer says the probe is up.
  await ask<string>(child, 'reset');
  return {
    reset: async () => void (await ask<string>(child, 'reset')),
    maxDelayMs: async () => (await ask<ChildStats>(child, 'stats')).loopDelayMaxMs,
    close: () => child.disconnect(),
  };
}
