// Health wiring of one pool: the active /health probe (plus progress liveness), the log lines on a change, and
// ending the tries in flight on a backend once it is ejected for a reason that says its generations are lost.
import type { ModelConfig } from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import { BackendHealth, type ProbeOutcome } from './backend-health.js';
import { busySince, type PoolEntry } from './pool-state.js';

/** A probe that has not answered by then counts as failed. */
export const PROBE_TIMEOUT_MS = 2_000;
/** How passive health names an error status a backend answered with (upstream-tries.ts). */
const ANSWERED_ERROR = /^HTTP \d+$/;

/** One active probe of the backend at `url` of `entry`. */
export async function probeBackend(options: {
  readonly entry: PoolEntry;
  readonly url: string;
  readonly signal: AbortSignal;
}): Promise<ProbeOutcome> {
  const { entry, url, signal } = options;
  const member = [...entry.members, ...entry.retiring].find((m) => m.backend.url === url);
  // OpenAI-style backends have no /health; only real traffic judges them. vLLM and SGLang both serve it.
  if (member === undefined || member.backend.type === 'openai') return true;
  const timeout = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  const response = await member.backend.pool.request({
    path: '/health',
    method: 'GET',
    signal: AbortSignal.any([signal, timeout]),
  });
  await response.body.dump();
  if (response.statusCode !== 200) return false;
  const stalled = await entry.progress.check({
    backend: member.backend,
    busySince: busySince(entry, url),
    // Non-stream tries waiting for their answer's headers are what watchDown tracks.
    awaiting: (entry.downWatchers.get(url)?.size ?? 0) > 0,
    held: entry.held.has(url),
    signal,
  });
  return stalled ?? true;
}

export interface PoolHealthOptions {
  readonly model: ModelConfig;
  readonly logger: Logger;
  readonly urls: readonly string[];
  /** The tries in flight per backend URL, ended when it goes down (the pool entry's `downWatchers`). */
  readonly downWatchers: ReadonlyMap<string, ReadonlySet<() => void>>;
  readonly probe: (url: string, signal: AbortSignal) => Promise<ProbeOutcome>;
}

export function createPoolHealth(options: PoolHealthOptions): BackendHealth {
  const { model, logger, downWatchers } = options;
  return new BackendHealth(options.urls, {
    intervalMs: model.health.intervalMs,
    ejectAfterFailures: model.health.ejectAfterFailures,
    recoverAfterMs: model.health.recoverAfterMs,
    stallHoldMs: model.health.stallHoldMs,
    probe: options.probe,
    onChange: (url, healthy) =>
      logger[healthy ? 'info' : 'warn'](healthy ? 'backend recovered' : 'backend ejected', {
        model: model.name,
        backend: url,
      }),
    onEjected: (url, reason) => {
      // An error the backend answered (a 5xx) says it is alive: its other generations are left to finish.
      // A failed probe, a stall or a lost connection says they will not.
      if (ANSWERED_ERROR.test(reason)) return;
      for (const listener of [...(downWatchers.get(url) ?? [])]) listener();
    },
  });
}
