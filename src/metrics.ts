// Prometheus metrics for `GET /metrics`, on the gateway's own registry (never the global one, so two
// gateways in one process — tests, embedders — do not collide). Hot-path observations are plain
// counter/histogram calls; store sizes and pool state are read only when a scrape asks (collect callbacks).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { CounterTally } from './metrics-tally.js';

export interface PoolSnapshotForMetrics {
  model: string;
  version: number;
  backends: ReadonlyArray<{ id: string; healthy: boolean; inflight: number; draining?: boolean }>;
}

export interface MetricsSources {
  /** Store sizes, read at scrape time. */
  storeStatistics?: () => Promise<{ total_rollouts: number; total_attempts: number; total_spans: number }>;
  pools?: () => readonly PoolSnapshotForMetrics[];
  paused?: () => boolean;
  /** Epoch seconds when the current pause began, null while running (docs/failure-classes.md#47: alert on long pauses). */
  pausedSince?: () => number | null;
  /** Whether the current pause has outlived `pause.alertAfterS`. */
  pauseOverdue?: () => boolean;
  /** Cumulative OTLP ingest counters (spans received, stored, skipped by reason), read at scrape time. */
  otlpIngest?: () => Readonly<Record<string, number>>;
  /** Whether the store can make writes durable (null: it cannot tell), from readiness's cached probe. */
  storeWritable?: () => Promise<boolean | null>;
  /** Weight swaps run by the rl plugin (docs/weight-swaps.md), read at scrape time. */
  weightSwaps?: () => {
    readonly swaps: ReadonlyArray<{ readonly model: string; readonly mode: string; readonly count: number }>;
    readonly fallbacks: ReadonlyArray<{ readonly model: string; readonly backend: string; readonly count: number }>;
    readonly last: { readonly model: string; readonly pause_ms: number; readonly drain_ms: number } | null;
    /** Expired prepares, by what the gateway made of them (resumed_old, committed_new, quarantined). */
    readonly expired?: ReadonlyArray<{ readonly model: string; readonly outcome: string; readonly count: number }>;
    /** Pools out of service because their engines hold weights no version names. */
    readonly quarantined?: ReadonlyArray<{ readonly model: string }>;
  };
}

const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** A swap pauses for the load (a LoRA adapter: well under a second) up to a drain of the longest generation. */
const SWAP_BUCKETS_S = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const FAST_BUCKETS_S = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'route' | 'status' | 'model' | 'outcome'>;
  /** The per-call increments of `requests` (metrics-tally.ts); added to it whenever it is read. */
  readonly requestTally = new CounterTally(['route', 'status', 'model', 'outcome'] as const);
  readonly upstreamLatency: Histogram<'model' | 'backend' | 'stream'>;
  readonly timeToFirstToken: Histogram<'model' | 'backend'>;
  readonly tokens: Counter<'model' | 'direction'>;
  /** The per-call increments of `tokens`, like `requestTally`. */
  readonly tokenTally = new CounterTally(['model', 'direction'] as const);
  readonly upstreamRetries: Counter<'model' | 'backend' | 'reason'>;
  readonly routingDecisions: Counter<'model' | 'decision'>;
  /** Sticky routing places every rollout call: its per-call increments, like `requestTally`. */
  readonly routingTally = new CounterTally(['model', 'decision'] as const);
  readonly tokenIdsMissing: Counter<'model' | 'status' | 'reason'>;
  readonly callsAborted: Counter<'model'>;
  readonly logprobsDropped: Counter<'model' | 'reason'>;
  readonly historyCalls: Counter<'model' | 'status' | 'reason'>;
  /** Every chat call of a faithful-history pool has a history status: its per-call increments, like `requestTally`. */
  readonly historyTally = new CounterTally(['model', 'status', 'reason'] as const);
  readonly historyHealedTurns: Counter<'model'>;
  readonly spanWriteLatency: Histogram<'store'>;
  readonly spansDropped: Counter<'exporter'>;
  readonly orphanCalls: Counter;
  readonly unrecordedCalls: Counter<'model' | 'action'>;
  readonly algorithmProgress: Gauge<'algorithm' | 'metric'>;
  /** Per swap: how long new calls were held (`pause`) and how much of it waited for generations (`drain`). */
  readonly weightSwapPause: Histogram<'model' | 'mode' | 'phase'>;
  #sources: MetricsSources = {};

  constructor(options: { defaultMetrics?: boolean; prefix?: string } = {}) {
    const p = options.prefix ?? 'rollgate_';
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: p });
    const requestTally = this.requestTally;
    this.requests = new Counter({
      name: `${p}requests_total`,
      help: 'HTTP requests served, by route family, HTTP status, model and outcome (ok, an error code or a stream status)',
      labelNames: ['route', 'status', 'model', 'outcome'],
      registers,
      collect() {
        requestTally.flushInto(this);
      },
    });
    this.upstreamLatency = new Histogram({
      name: `${p}upstream_latency_seconds`,
      help: 'Time from forwarding a call to the end of its upstream response',
      labelNames: ['model', 'backend', 'stream'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    this.timeToFirstToken = new Histogram({
      name: `${p}time_to_first_token_seconds`,
      help: 'Time from forwarding a streamed call to its first upstream chunk',
      labelNames: ['model', 'backend'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    const tokenTally = this.tokenTally;
    this.tokens = new Counter({
      name: `${p}tokens_total`,
      help: 'Tokens seen in calls, by direction (in = prompt, out = completion)',
      labelNames: ['model', 'direction'],
      registers,
      collect() {
        tokenTally.flushInto(this);
      },
    });
    this.upstreamRetries = new Counter({
      name: `${p}upstream_retries_total`,
      help: 'Upstream tries repeated by the gateway, by reason',
      labelNames: ['model', 'backend', 'reason'],
      registers,
    });
    const routingTally = this.routingTally;
    this.routingDecisions = new Counter({
      name: `${p}routing_decisions_total`,
      help: "Rollout calls placed by the pool's routing (docs/routing.md): sticky, moved or new",
      labelNames: ['model', 'decision'],
      registers,
      collect() {
        routingTally.flushInto(this);
      },
    });
    this.tokenIdsMissing = new Counter({
      name: `${p}token_ids_incomplete_total`,
      help: 'Calls whose token ids were missing or partial (untrainable), by status and rollgate.token_ids.reason',
      labelNames: ['model', 'status', 'reason'],
      registers,
    });
    this.callsAborted = new Counter({
      name: `${p}calls_aborted_total`,
      help: 'Calls the engine aborted (finish reason abort, Responses status cancelled); never trainable',
      labelNames: ['model'],
      registers,
    });
    this.logprobsDropped = new Counter({
      name: `${p}logprobs_dropped_total`,
      help: 'Calls whose logprobs were left out of the record, by rollgate.logprobs.dropped (floor = -9999 placeholder)',
      labelNames: ['model', 'reason'],
      registers,
    });
    const historyTally = this.historyTally;
    this.historyCalls = new Counter({
      name: `${p}history_calls_total`,
      help:
        'Chat calls of faithful-history pools, by rollgate.history.status (linear, healed, forked, bypassed) and the ' +
        'fork or bypass reason',
      labelNames: ['model', 'status', 'reason'],
      registers,
      collect() {
        historyTally.flushInto(this);
      },
    });
    this.historyHealedTurns = new Counter({
      name: `${p}history_healed_turns_total`,
      help: 'Assistant turns whose served ids faithful history spliced back over the engine rendering, summed over calls',
      labelNames: ['model'],
      registers,
    });
    this.spanWriteLatency = new Histogram({
      name: `${p}span_write_latency_seconds`,
      help: 'Time to make one call span durable in the store',
      labelNames: ['store'],
      buckets: FAST_BUCKETS_S,
      registers,
    });
    this.spansDropped = new Counter({
      name: `${p}spans_dropped_total`,
      help: 'Spans an exporter dropped (queue full or collector down)',
      labelNames: ['exporter'],
      registers,
    });
    this.orphanCalls = new Counter({
      name: `${p}orphan_calls_total`,
      help: 'Calls answered whose span was not stored because their rollout was deleted meanwhile',
      registers,
    });
    this.unrecordedCalls = new Counter({
      name: `${p}unrecorded_calls_total`,
      help:
        'Answered calls whose span the store did not take, by action: failed (503 or a stream error event, the ' +
        'default) or served (recording.onFailure = serve: the answer went out, its span is lost)',
      labelNames: ['model', 'action'],
      registers,
    });
    this.algorithmProgress = new Gauge({
      name: `${p}algorithm_progress`,
      help: 'Progress values reported by running algorithms (round, step, best score, ...)',
      labelNames: ['algorithm', 'metric'],
      registers,
    });

    const sources = () => this.#sources;
    new Gauge({
      name: `${p}store_objects`,
      help: 'Objects in the store, by kind',
      labelNames: ['kind'],
      registers,
      async collect() {
        const stats = await sources().storeStatistics?.();
        if (stats === undefined) return;
        this.set({ kind: 'rollouts' }, stats.total_rollouts);
        this.set({ kind: 'attempts' }, stats.total_attempts);
        this.set({ kind: 'spans' }, stats.total_spans);
      },
    });
    new Gauge({
      name: `${p}backend_inflight`,
      help: 'Calls in flight per backend (slots are held until the upstream response closes)',
      labelNames: ['model', 'backend'],
      registers,
      collect() {
        this.reset();
        for (const pool of sources().pools?.() ?? []) {
          for (const backend of pool.backends) this.set({ model: pool.model, backend: backend.id }, backend.inflight);
        }
      },
    });
    new Gauge({
      name: `${p}backend_healthy`,
      help: '1 when the backend is healthy and not draining, else 0',
      labelNames: ['model', 'backend'],
      registers,
      collect() {
        this.reset();
        for (const pool of sources().pools?.() ?? []) {
          for (const backend of pool.backends) {
            this.set({ model: pool.model, backend: backend.id }, backend.healthy && !backend.draining ? 1 : 0);
          }
        }
      },
    });
    new Gauge({
      name: `${p}model_version`,
      help: 'Model version currently served by each pool',
      labelNames: ['model'],
      registers,
      collect() {
        this.reset();
        for (const pool of sources().pools?.() ?? []) this.set({ model: pool.model }, pool.version);
      },
    });
    new Counter({
      name: `${p}otlp_ingest_spans_total`,
      help: 'Spans received on POST /v1/traces, by outcome (received, stored, skipped*)',
      labelNames: ['outcome'],
      registers,
      collect() {
        const stats = sources().otlpIngest?.();
        if (stats === undefined) return;
        this.reset();
        for (const [outcome, value] of Object.entries(stats)) this.inc({ outcome }, value);
      },
    });
    new Gauge({
      name: `${p}store_writable`,
      help: '1 while the store can make writes durable, 0 when it cannot (file deleted, read-only, full, unreachable); see /ready',
      registers,
      async collect() {
        const writable = await sources().storeWritable?.();
        if (writable === undefined || writable === null) return;
        this.set(writable ? 1 : 0);
      },
    });
    new Gauge({
      name: `${p}paused_seconds`,
      help: 'Seconds since the current pause began (0 while running); alert when above the weight-update budget',
      registers,
      collect() {
        const since = sources().pausedSince?.() ?? null;
        this.set(since === null ? 0 : Math.max(0, Date.now() / 1000 - since));
      },
    });
    new Gauge({
      name: `${p}pause_overdue`,
      help: '1 while a pause has lasted longer than pause.alertAfterS (a resume was probably forgotten)',
      registers,
      collect() {
        this.set(sources().pauseOverdue?.() ? 1 : 0);
      },
    });
    new Counter({
      name: `${p}weight_swaps_total`,
      help: 'Weight swaps completed, by pool and mode (drain, keep, abort-resubmit)',
      labelNames: ['model', 'mode'],
      registers,
      collect() {
        const stats = sources().weightSwaps?.();
        if (stats === undefined) return;
        this.reset();
        for (const row of stats.swaps) this.inc({ model: row.model, mode: row.mode }, row.count);
      },
    });
    new Counter({
      name: `${p}weight_swap_fallbacks_total`,
      help: 'Backends drained instead of frozen during a keep-mode weight swap (their dev routes answered 404)',
      labelNames: ['model', 'backend'],
      registers,
      collect() {
        const stats = sources().weightSwaps?.();
        if (stats === undefined) return;
        this.reset();
        for (const row of stats.fallbacks) this.inc({ model: row.model, backend: row.backend }, row.count);
      },
    });
    new Counter({
      name: `${p}weight_swap_expired_total`,
      help:
        'Prepared weight transfers the trainer neither committed nor aborted in time, by what the gateway made of ' +
        'them from the versions the engines report: resumed_old, committed_new, quarantined',
      labelNames: ['model', 'outcome'],
      registers,
      collect() {
        const stats = sources().weightSwaps?.();
        if (stats === undefined) return;
        this.reset();
        for (const row of stats.expired ?? []) this.inc({ model: row.model, outcome: row.outcome }, row.count);
      },
    });
    new Gauge({
      name: `${p}weight_swap_quarantined`,
      help: '1 while a pool is out of service because its engines hold weights no version names (503 + Retry-After)',
      labelNames: ['model'],
      registers,
      collect() {
        const stats = sources().weightSwaps?.();
        if (stats === undefined) return;
        this.reset();
        for (const row of stats.quarantined ?? []) this.set({ model: row.model }, 1);
      },
    });
    this.weightSwapPause = new Histogram({
      name: `${p}weight_swap_pause_seconds`,
      help:
        'Pause window of each weight swap by pool and mode: phase pause = how long new calls were held, ' +
        'phase drain = how much of it waited for in-flight generations to finish',
      labelNames: ['model', 'mode', 'phase'],
      buckets: SWAP_BUCKETS_S,
      registers,
    });
    new Gauge({
      name: `${p}weight_swap_last_pause_seconds`,
      help: 'How long the last weight swap held new calls, and how much of it waited for generations to drain',
      labelNames: ['model', 'phase'],
      registers,
      collect() {
        const last = sources().weightSwaps?.().last ?? null;
        this.reset();
        if (last === null) return;
        this.set({ model: last.model, phase: 'pause' }, last.pause_ms / 1000);
        this.set({ model: last.model, phase: 'drain' }, last.drain_ms / 1000);
      },
    });
    new Gauge({
      name: `${p}paused`,
      help: '1 while the gateway is paused for a weight update',
      registers,
      collect() {
        this.set(sources().paused?.() ? 1 : 0);
      },
    });
  }

  /** Late binding: the parts that own this state are built after the metrics object. */
  bind(sources: MetricsSources): void {
    this.#sources = { ...this.#sources, ...sources };
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
