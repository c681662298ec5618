// The engine state behind the HTTP routes: base weights, LoRA adapters, the simulated prefix cache, and the
// scheduler states vLLM's dev routes drive (pause/resume, sleep/wake_up, abort).
//
// Prefix cache: full blocks of `blockSize` prompt (and generated) tokens, keyed like vLLM's block hashes by
// (LoRA internal id, cache_salt, the token prefix) and NOT by the weights. Each block remembers the weights that
// computed it. A request that reuses blocks computed under other weights really is computed under the oldest of
// them (vllm-project/vllm#42125: after an in-place LoRA reload, or a weight update without a cache reset, shared prefixes
// reuse stale KV). A new cache_salt, POST /reset_prefix_cache, /pause (abort|wait, clear_cache) and /sleep clear it.
import { VllmError } from './errors.js';
import type { TwinWeights } from './types.js';
import { fnv1a, hashInts, mix } from './util.js';

export type PauseMode = 'abort' | 'wait' | 'keep';
export type WakeTag = 'weights' | 'kv_cache';

export interface LoraAdapter {
  readonly name: string;
  /** vLLM's lora_int_id: assigned at the first load, kept by in-place reloads. */
  readonly id: number;
  path: string;
  /** 1 at the first load, +1 per in-place reload: the adapter's weights. */
  version: number;
}

/** One generation request as the scheduler sees it. */
export class ActiveRequest {
  aborted = false;
  /**
   * Set by an SGLang `retract` pause while the request runs: its KV was freed, and it is prefilled again (prompt and
   * tokens so far) by whatever weights the engine holds when it continues.
   */
  retracted = false;
  private readonly listeners = new Set<() => void>();

  /** The ids /abort_requests accepts: the response id (`chatcmpl-...`) and the caller's request id. */
  constructor(readonly ids: ReadonlySet<string>) {}

  onAbort(listener: () => void): () => void {
    if (this.aborted) {
      listener();
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const l of [...this.listeners]) l();
    this.listeners.clear();
  }
}

export interface PrefixLookup {
  cachedTokens: number;
  /** The oldest weights among the reused blocks, when any differ from the request's current weights. */
  staleWeights: TwinWeights | null;
  /** The weights of the reused blocks, by block. */
  blockWeights: TwinWeights[];
}

/** Older = fewer base updates, then an older adapter version. */
export function olderWeights(a: TwinWeights, b: TwinWeights): TwinWeights {
  if (a.base !== b.base) return a.base < b.base ? a : b;
  return (a.lora?.version ?? 0) <= (b.lora?.version ?? 0) ? a : b;
}

/** The scheduler's statistics as an engine publishes them on /metrics (twin/metrics.ts renders them). */
export interface EngineMetrics {
  readonly running: number;
  readonly waiting: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  readonly finishedRequests: number;
}

/** What vLLM and SGLang report as the weights' label until something sets one (their engines start with it). */
export const UNLABELLED_WEIGHT_VERSION = 'default';

export class Engine {
  private base = 0;
  private label: string | null = null;
  private discarded = false;
  private readonly adapterMap = new Map<string, LoraAdapter>();
  private nextLoraId = 1;
  private readonly weightObjects = new Map<string, TwinWeights>();
  private readonly cache = new Map<number, TwinWeights>();
  private pauseMode: PauseMode | null = null;
  private pausedBySleep = false;
  private readonly asleep = new Set<WakeTag>();
  private sleepLevel = 0;
  private readonly running = new Set<ActiveRequest>();
  private readonly queued = new Set<ActiveRequest>();
  private readonly waiters = new Set<() => void>();
  /** The token counters of /metrics: prompts count once their prefill is done (their first token), as in vLLM. */
  private promptTokens = 0;
  private generationTokens = 0;
  private finishedRequests = 0;
  /**
   * Set by the twin's /_twin/hang: the engine loop is stuck (a deadlock, a stuck collective) while the HTTP server,
   * /health included, still answers. Nothing is admitted or stepped, and /metrics keeps showing what the loop last
   * published, since a real engine's statistics come from the loop itself.
   */
  private hungAt: EngineMetrics | null = null;

  /**
   * `maxBlocks`: the most prefix blocks cached, as a real engine's KV pool holds a fixed number of blocks; past it
   * the oldest stored block goes first. Default: unbounded (tests inspect what was cached).
   */
  constructor(
    readonly blockSize: number,
    private readonly maxBlocks = Number.POSITIVE_INFINITY,
  ) {}

  // -------------------------------------------------------------------------------------------------------------
  // Progress statistics (/metrics)

  /** A choice produced its first token: its prompt's prefill is done. */
  countPrefill(promptTokens: number): void {
    this.promptTokens += promptTokens;
  }

  countGenerated(tokens: number): void {
    this.generationTokens += tokens;
  }

  /** What /metrics shows now. */
  get metrics(): EngineMetrics {
    return (
      this.hungAt ?? {
        running: this.running.size,
        waiting: this.queued.size,
        promptTokens: this.promptTokens,
        generationTokens: this.generationTokens,
        finishedRequests: this.finishedRequests,
      }
    );
  }

  /** Sticks (true) or frees (false) the engine loop; /health is unaffected. */
  setHung(hung: boolean): void {
    if (hung && this.hungAt === null) this.hungAt = this.metrics;
    if (!hung) this.hungAt = null;
    this.notify();
  }

  get hung(): boolean {
    return this.hungAt !== null;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Weights and adapters

  get adapters(): ReadonlyMap<string, LoraAdapter> {
    return this.adapterMap;
  }

  get weightVersion(): string | null {
    return this.label;
  }

  /** The weights a request for `loraName` (null = the base model) is computed under right now. */
  weightsFor(loraName: string | null): TwinWeights {
    const adapter = loraName === null ? undefined : this.adapterMap.get(loraName);
    const lora = adapter ? { name: adapter.name, id: adapter.id, version: adapter.version, path: adapter.path } : null;
    const key = `base@${this.base}${this.discarded ? '!discarded' : ''}${lora ? `+lora:${lora.name}#${lora.id}v${lora.version}` : ''}`;
    let w = this.weightObjects.get(key);
    // The label is reported, not part of the identity: relabelling does not change what the weights compute.
    if (!w || w.label !== this.label) {
      w = { base: this.base, label: this.label, lora, discarded: this.discarded, key };
      this.weightObjects.set(key, w);
    }
    return w;
  }

  /** POST /update_weights: the new weights compute every token from now on (in-flight requests included). */
  updateWeights(): void {
    this.base++;
    this.discarded = false;
  }

  setWeightVersion(label: string | null): void {
    this.label = label;
  }

  loadLora(options: { name: string; path: string; inplace: boolean }): void {
    const { name, path, inplace } = options;
    const existing = this.adapterMap.get(name);
    if (existing) {
      if (!inplace) {
        throw new VllmError(
          400,
          `The lora adapter '${name}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.`,
          'InvalidUserInput',
        );
      }
      existing.version++;
      existing.path = path;
      return;
    }
    this.adapterMap.set(name, { name, id: this.nextLoraId++, path, version: 1 });
  }

  unloadLora(name: string): void {
    if (!this.adapterMap.delete(name)) {
      throw new VllmError(404, `The lora adapter '${name}' cannot be found.`, 'NotFoundError');
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Prefix cache

  private blockHashes(ids: readonly number[], loraId: number, salt: string | null): number[] {
    const hashes: number[] = [];
    let parent = mix(fnv1a(salt ?? ''), loraId);
    for (let end = this.blockSize; end <= ids.length; end += this.blockSize) {
      parent = hashInts(ids.slice(end - this.blockSize, end), parent);
      hashes.push(parent);
    }
    return hashes;
  }

  lookupPrefix(options: {
    ids: readonly number[];
    loraId: number;
    salt: string | null;
    current: TwinWeights;
  }): PrefixLookup {
    // vLLM always recomputes at least the last prompt token.
    const usable = Math.floor(Math.max(0, options.ids.length - 1) / this.blockSize);
    const hashes = this.blockHashes(options.ids.slice(0, usable * this.blockSize), options.loraId, options.salt);
    const blockWeights: TwinWeights[] = [];
    for (const h of hashes) {
      const w = this.cache.get(h);
      if (!w) break;
      blockWeights.push(w);
    }
    let stale: TwinWeights | null = null;
    for (const w of blockWeights) if (w.key !== options.current.key) stale = stale ? olderWeights(stale, w) : w;
    return { cachedTokens: blockWeights.length * this.blockSize, staleWeights: stale, blockWeights };
  }

  /** Caches the full blocks of `ids`; `weightsAt(i)` = the weights that computed token i. Existing blocks stay. */
  storePrefix(options: {
    ids: readonly number[];
    loraId: number;
    salt: string | null;
    weightsAt: (index: number) => TwinWeights;
  }): void {
    const hashes = this.blockHashes(options.ids, options.loraId, options.salt);
    hashes.forEach((h, b) => {
      if (this.cache.has(h)) return;
      let w = options.weightsAt(b * this.blockSize);
      for (let i = b * this.blockSize + 1; i < (b + 1) * this.blockSize; i++) w = olderWeights(w, options.weightsAt(i));
      this.cache.set(h, w);
      // Map order is insertion order: the first key is the oldest block.
      while (this.cache.size > this.maxBlocks) {
        const oldest = this.cache.keys().next();
        if (oldest.done === true) break;
        this.cache.delete(oldest.value);
      }
    });
  }

  resetPrefixCache(): void {
    this.cache.clear();
  }

  get cachedBlocks(): number {
    return this.cache.size;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Scheduling

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves once `ready()` holds or the request is aborted; re-checked on every state change (no polling). */
  private waitFor(request: ActiveRequest, ready: () => boolean): Promise<void> {
    if (ready() || request.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let off = () => {};
      const check = () => {
        if (!ready() && !request.aborted) return;
        this.waiters.delete(check);
        off();
        resolve();
      };
      off = request.onAbort(check);
      this.waiters.add(check);
    });
  }

  private get blocked(): boolean {
    return this.pauseMode !== null || this.asleep.size > 0 || this.hungAt !== null;
  }

  /** Whether admit() would make a new request wait (paused or asleep). */
  get admitting(): boolean {
    return !this.blocked;
  }

  /** A new request waits here while the engine is paused or asleep, as vLLM queues it. */
  async admit(request: ActiveRequest): Promise<void> {
    this.queued.add(request);
    await this.waitFor(request, () => !this.blocked);
    this.queued.delete(request);
    if (!request.aborted) this.running.add(request);
  }

  /** Before each step: a request frozen by /pause?mode=keep (or a keep-mode sleep) waits for /resume. */
  gate(request: ActiveRequest): Promise<void> {
    return this.waitFor(request, () => this.pauseMode !== 'keep' && this.hungAt === null);
  }

  finish(request: ActiveRequest): void {
    this.queued.delete(request);
    if (this.running.delete(request)) {
      if (!request.aborted) this.finishedRequests += 1;
      this.notify();
    }
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Resolves once no request is running (SGLang's weight update waits for in-flight requests this way). */
  whenIdle(): Promise<void> {
    return this.drain();
  }

  private drain(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.running.size > 0) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  async pause(mode: PauseMode, clearCache: boolean): Promise<void> {
    this.pauseMode = mode;
    this.notify();
    if (mode === 'keep') return;
    if (mode === 'abort') for (const r of [...this.running]) r.abort();
    await this.drain();
    if (clearCache) this.resetPrefixCache();
  }

  /** SGLang's `retract` pause: the running requests lose their KV and are recomputed when they continue. */
  retractRunning(): void {
    for (const r of this.running) r.retracted = true;
  }

  resume(): void {
    this.pauseMode = null;
    this.pausedBySleep = false;
    this.notify();
  }

  get paused(): boolean {
    return this.pauseMode !== null;
  }

  /** Aborts the requests with these ids (running or queued), or all of them; returns how many. */
  abortRequests(ids?: readonly string[]): number {
    const targets = [...this.running, ...this.queued].filter(
      (r) => ids === undefined || ids.length === 0 || ids.some((id) => r.ids.has(id)),
    );
    for (const r of targets) r.abort();
    return targets.length;
  }

  async sleep(level: number, mode: PauseMode): Promise<void> {
    if (this.pauseMode === null) this.pausedBySleep = true;
    await this.pause(mode, false);
    this.sleepLevel = level;
    this.asleep.add('weights');
    this.asleep.add('kv_cache');
    // Both levels free the KV cache; level 2 also discards the weights (they must be reloaded).
    this.resetPrefixCache();
    if (level >= 2) this.discarded = true;
  }

  wakeUp(tags?: readonly WakeTag[]): void {
    for (const t of tags && tags.length > 0 ? tags : (['weights', 'kv_cache'] as const)) this.asleep.delete(t);
    if (this.asleep.size === 0) {
      this.sleepLevel = 0;
      if (this.pausedBySleep) this.resume();
    }
    this.notify();
  }

  get sleeping(): boolean {
    return this.asleep.size > 0;
  }

  get level(): number {
    return this.sleepLevel;
  }
}
