// The progress half of a backend's health probe (docs/gateway.md, "Progress liveness"). vLLM's /health answers
// while the engine process lives (SGLang's too where it only checks the HTTP server), so a hung engine loop passes
// it and a non-stream call to it would wait out its first-byte timeout (20 minutes by default) per try. On the probe's schedule, while the gateway has had calls on
// a backend for a whole probe interval (or the backend is held for a stall), this reads its /metrics: when the
// engine has work and its counters have not moved for `stallMs` (progress-watch.ts), the probe fails with
// `engine_stalled`, which marks the backend down and ends the non-stream tries waiting on it.
import type { Logger } from '../../logger.js';
import { readEngineProgress } from './engine-progress.js';
import type { Backend } from './model-registry.js';
import { ProgressWatch } from './progress-watch.js';

export const ENGINE_STALLED = 'engine_stalled';

export interface ProgressProbeOptions {
  readonly model: string;
  /** 0 turns the check off. */
  readonly stallMs: number;
  /** The health probe interval: calls must have been in flight that long before a read is worth its request. */
  readonly intervalMs: number;
  /** Bounds each metrics read. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface ProgressCheck {
  readonly backend: Backend;
  /** Since when the gateway has had calls in flight on the backend without a break; null: none now. */
  readonly busySince: number | null;
  /**
   * Whether non-stream tries on it wait for their answer. Those count as work the engine owes even when it shows
   * none (a loop hung while idle never queues the requests sent to it); calls whose answer has begun do not (an
   * agent reading slowly holds its call open after the engine is done).
   */
  readonly awaiting: boolean;
  /**
   * A weight swap of this gateway holds the backend paused or asleep: its work waits on purpose. SGLang cannot be
   * asked (it has no /is_paused), and a paused engine with queued requests looks exactly like a stalled one.
   */
  readonly held: boolean;
  readonly signal: AbortSignal;
}

export interface ProgressProbe {
  /** The probe failure to report (`{ failed: 'engine_stalled' }`), or null when there is none. */
  check(check: ProgressCheck): Promise<{ readonly failed: string } | null>;
  /** The backend left the pool. */
  remove(url: string): void;
}

async function getText(options: { backend: Backend; path: string; signal: AbortSignal; timeoutMs: number }) {
  const response = await options.backend.pool.request({
    path: options.path,
    method: 'GET',
    signal: AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

export function createProgressProbe(options: ProgressProbeOptions): ProgressProbe {
  const now = options.now ?? Date.now;
  const watch = new ProgressWatch(options.stallMs);
  /** Backends without engine metrics (a 404, or none of the families): checked no more, said once. */
  const without = new Set<string>();

  /** vLLM (dev mode) says whether it was paused on purpose (a weight update holding its generations). */
  async function pausedOnPurpose(check: ProgressCheck): Promise<boolean> {
    if (check.backend.type !== 'vllm') return false;
    try {
      const { status, text } = await getText({ ...check, path: '/is_paused', timeoutMs: options.timeoutMs });
      if (status !== 200) return false;
      const body: unknown = JSON.parse(text);
      return typeof body === 'object' && body !== null && 'is_paused' in body && body.is_paused === true;
    } catch {
      return false;
    }
  }

  const held = (url: string) => (watch.stalled(url) ? { failed: ENGINE_STALLED } : null);

  return {
    async check(check) {
      const { backend } = check;
      const url = backend.url;
      if (options.stallMs === 0 || backend.type === 'openai' || without.has(url)) return null;
      const at = now();
      const busyLongEnough = check.busySince !== null && at - check.busySince >= options.intervalMs;
      if (!busyLongEnough && !watch.stalled(url)) {
        watch.forget(url);
        return null;
      }
      let read: { status: number; text: string };
      try {
        read = await getText({ backend, path: '/metrics', signal: check.signal, timeoutMs: options.timeoutMs });
      } catch {
        // A metrics read that fails says nothing new about the loop: a stalled backend stays so, others are left
        // to /health and real calls.
        return held(url);
      }
      const progress = read.status === 200 ? readEngineProgress(read.text) : null;
      if (progress === null) {
        if (read.status === 404 || read.status === 200) {
          without.add(url);
          watch.forget(url);
          options.logger.info('backend serves no engine metrics: progress liveness is off for it', {
            model: options.model,
            backend: url,
            status: read.status,
          });
          return null;
        }
        return held(url);
      }
      const verdict = watch.observe({ id: url, progress, gatewayBusy: check.awaiting, now: now() });
      if (verdict === 'progressing') return null;
      if (check.held || (await pausedOnPurpose(check))) {
        watch.excuse({ id: url, now: now() });
        return null;
      }
      return { failed: ENGINE_STALLED };
    },
    remove(url) {
      without.delete(url);
      watch.forget(url);
    },
  };
}
