// Versions true to the token. A keep-mode weight swap (docs/weight-swaps.md) freezes a generation, loads new
// weights and lets it continue: its first tokens come from one version, the rest from the next. A stream tells
// the gateway where that happened: the number of response ids it had relayed when the pool's version changed on
// the call's server (the engine was frozen then, so every id relayed so far was computed before the load). The
// call's span then names the version of every token (`rollgate.model_version.segments`) instead of being marked
// `changed_in_flight` as a whole, which is what a call whose change point is unknown (non-stream answers, changes
// before the call could watch) still gets.
import type { Attributes } from '@opentelemetry/api';
import * as A from '../../contracts/span-attributes.js';
import { parseVersionSegments, segmentsOver, type VersionSegment } from '../../contracts/stored-call.js';
import type { ModelRegistry, ResolvedRoute, VersionChange } from '../pools/model-registry.js';

export type { VersionSegment } from '../../contracts/stored-call.js';

interface Boundary {
  readonly at: number;
  readonly version: number;
}

export class CallVersions {
  readonly #initial: number;
  readonly #boundaries: Boundary[] = [];
  readonly #tokensSoFar: () => number | null;
  #unknown = false;
  #unwatch: () => void = () => undefined;

  private constructor(initial: number, tokensSoFar: () => number | null) {
    this.#initial = initial;
    this.#tokensSoFar = tokensSoFar;
  }

  /**
   * Watches the route's backend for version changes while the call runs. `tokensSoFar` is the number of response
   * ids relayed to the agent so far, or null when this kind of answer cannot tell (non-stream, ids only at the end).
   */
  static watch(options: {
    readonly registry: ModelRegistry;
    readonly route: ResolvedRoute;
    readonly tokensSoFar: () => number | null;
  }): CallVersions {
    const { registry, route } = options;
    const versions = new CallVersions(route.model.version, options.tokensSoFar);
    versions.#unwatch = registry.watchVersion(route, (change) => versions.#change(change));
    return versions;
  }

  #change(change: VersionChange): void {
    const at = change.known ? this.#tokensSoFar() : null;
    // Nothing relayed yet: the generation may not have started (queued behind the freeze, or prefilling), and its
    // prompt carried the old version's cache_salt, so KV the old weights computed may feed every token. Unknown.
    if (at === null || at === 0) {
      this.#unknown = true;
      return;
    }
    this.#boundaries.push({ at, version: change.version });
  }

  /** Stops watching; idempotent. */
  close(): void {
    this.#unwatch();
    this.#unwatch = () => undefined;
  }

  /**
   * The span attributes once the call ended: segments when every change has a known place in `total` response
   * ids, `changed_in_flight` when one has not (or `changedInFlight` says so and no change was seen), none otherwise.
   */
  attributes(options: {
    readonly total: number | null;
    readonly changedInFlight: boolean;
    /** A continued stream's tokens before this call's (continued-call.ts): the segments then cover both. */
    readonly prefix?: SegmentPrefix;
  }): Attributes {
    this.close();
    const { total, prefix } = options;
    if (this.#unknown || (this.#boundaries.length > 0 && (total === null || total === 0))) {
      return { [A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]: true };
    }
    if (prefix !== undefined) {
      if (total === null || (options.changedInFlight && this.#boundaries.length === 0)) {
        return { [A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]: true };
      }
      const own = versionSegments(this.#initial, this.#boundaries, total);
      return { [A.ATTR_MODEL_VERSION_SEGMENTS]: JSON.stringify(prefixedSegments(prefix, own)) };
    }
    if (this.#boundaries.length === 0 || total === null) {
      return options.changedInFlight ? { [A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]: true } : {};
    }
    return { [A.ATTR_MODEL_VERSION_SEGMENTS]: JSON.stringify(versionSegments(this.#initial, this.#boundaries, total)) };
  }
}

/** Response ids that come before a call's own, with their versions. */
export interface SegmentPrefix {
  readonly length: number;
  /** Over `0..length`, in order. */
  readonly segments: readonly VersionSegment[];
}

/** The prefix's segments, then `own` shifted past the prefix; adjacent segments of one version merge. */
export function prefixedSegments(prefix: SegmentPrefix, own: readonly VersionSegment[]): VersionSegment[] {
  const out: VersionSegment[] = [];
  const shifted = own.map(([s, e, v]): VersionSegment => [s + prefix.length, e + prefix.length, v]);
  for (const [start, end, version] of [...prefix.segments, ...shifted]) {
    const last = out[out.length - 1];
    if (last !== undefined && last[2] === version && last[1] === start) out[out.length - 1] = [last[0], end, version];
    else out.push([start, end, version]);
  }
  return out;
}

/** Segments over `total` ids from the starting version and the change points (a version with no token drops out). */
export function versionSegments(initial: number, boundaries: readonly Boundary[], total: number): VersionSegment[] {
  const segments: VersionSegment[] = [];
  let start = 0;
  let version = initial;
  for (const b of boundaries) {
    const at = Math.min(Math.max(b.at, start), total);
    if (at > start) segments.push([start, at, version]);
    start = at;
    version = b.version;
  }
  if (total > start) segments.push([start, total, version]);
  return segments;
}

/**
 * The segments a span recorded, checked to cover `0..length` in order; null when absent or not usable (a reader
 * then falls back to the span's single version). Read as the stored-call reader reads them (contracts/stored-call.ts).
 */
export function readVersionSegments(value: unknown, length: number): VersionSegment[] | null {
  const segments = segmentsOver(parseVersionSegments(value), length);
  return segments === null ? null : [...segments];
}
