// agent-lightning v1's rollouts, events and attempts, mapped onto the one rollgate store (routes/agl-v1.ts only
// reads requests and shapes answers). v1 has no attempts of its own: the first call or event under an attempt id
// starts it through the gateway's attribution service. A PATCH and the start of an attempt on the same rollout run
// under one per-rollout lock, so an attempt cannot start between a PATCH's read and its write.
import type { RolloutAttribution } from '../attribution/rollout-attribution.js';
import { GatewayError } from '../errors.js';
import { StoreError } from '../store/core/errors.js';
import type { AttemptedRollout, JsonObject, JsonValue, LightningStore, Rollout } from '../store/core/types.js';
import { eventSpan, spanToEvent, type V1Event, validateEventData } from './events.js';
import { KeyedLock } from './keyed-lock.js';
import {
  canTransition,
  dataIdOf,
  newV1Metadata,
  toV1Rollout,
  type V1Rollout,
  type V1State,
  v1StateOf,
  withV1Status,
} from './rollout-map.js';
import { toTripletEvents } from './triplet.js';

/** v1's attempt id when a rollout names none (`status.last_attempt_id` unset). */
const DEFAULT_ATTEMPT_ID = '0';

export interface V1RolloutCreateRequest {
  readonly rollout_id?: string | null | undefined;
  readonly input: JsonValue;
  readonly is_train: boolean;
  readonly config?: JsonObject | null | undefined;
  readonly metadata?: JsonObject | null | undefined;
}

export interface V1StatusPatch {
  readonly state?: V1State | undefined;
  readonly k8s_job_name?: string | null | undefined;
  readonly last_attempt_id?: string | null | undefined;
  readonly error_message?: string | null | undefined;
}

export interface V1TerminalItem {
  readonly rollout_id: string;
  readonly state: V1State;
  readonly data_id: string;
  readonly is_train: boolean;
}

export interface V1TerminalPage {
  readonly items: V1TerminalItem[];
  readonly next_after: number;
  readonly total_terminal: number;
}

export interface V1EventsQuery {
  readonly eventType?: string | undefined;
  readonly format?: 'triplet' | undefined;
}

export function rolloutNotFound(rid: string): GatewayError {
  return new GatewayError('rollout_not_found', `Rollout not found: ${rid}`, { param: 'rollout_id' });
}

export class V1Rollouts {
  readonly #store: LightningStore;
  readonly #attribution: RolloutAttribution;
  readonly #lock = new KeyedLock();

  constructor(options: { readonly store: LightningStore; readonly attribution: RolloutAttribution }) {
    this.#store = options.store;
    this.#attribution = options.attribution;
  }

  /**
   * The store attempt a v1 call or event belongs to, started when new (unless the rollout is finished: see
   * RolloutAttribution.ensureOnExistingRollout). A known pair costs no store round trip.
   */
  async ensureAttempt(rid: string, aid: string): Promise<string> {
    if (this.#attribution.lookup(rid, aid) !== undefined) return aid;
    return this.#lock.run(rid, () => this.#ensureAttemptLocked(rid, aid));
  }

  /** Attribution of a v1 proxied call: its attempt, started when new, and its sequence id (arrival order). */
  async attributeCall(rid: string, aid: string): Promise<{ readonly aid: string; readonly seq: number }> {
    const attemptId = await this.ensureAttempt(rid, aid);
    return { aid: attemptId, seq: await this.#store.nextSequenceId(rid, attemptId) };
  }

  /** Idempotent by id: an existing rollout comes back unchanged. */
  async create(creates: readonly V1RolloutCreateRequest[]): Promise<V1Rollout[]> {
    const out: V1Rollout[] = [];
    for (const create of creates) {
      const existing = create.rollout_id == null ? null : await this.#store.getRolloutById(create.rollout_id);
      if (existing !== null) {
        out.push(toV1Rollout(existing));
        continue;
      }
      const rollout = await this.#store.enqueueRollout({
        input: create.input,
        mode: create.is_train ? 'train' : 'val',
        metadata: newV1Metadata(
          {
            input: create.input,
            is_train: create.is_train,
            config: create.config ?? undefined,
            metadata: create.metadata ?? undefined,
          },
          new Date(),
        ),
        ...(create.rollout_id == null ? {} : { rollout_id: create.rollout_id }),
      });
      out.push(toV1Rollout(rollout));
    }
    return out;
  }

  async get(rid: string): Promise<{ rollout: V1Rollout; attempts: string[] }> {
    const rollout = await this.#require(rid);
    const attempts = await this.#store.queryAttempts(rid);
    return { rollout: toV1Rollout(rollout), attempts: attempts.items.map((a) => a.attempt_id) };
  }

  /** A v1 status PATCH: checks the transition, starts the named attempt on `running`, ends the rollout on a finish. */
  patch(rid: string, patch: V1StatusPatch | null | undefined): Promise<V1Rollout> {
    return this.#lock.run(rid, async () => {
      const rollout = await this.#require(rid);
      const current = toV1Rollout(rollout);
      if (patch == null || Object.keys(patch).length === 0) return current;
      const from = current.status.state;
      const to = patch.state;
      if (to !== undefined && !canTransition(from, to)) {
        throw new StoreError('conflict', `Rollout ${rid}: cannot transition ${from} -> ${to}`, { param: 'state' });
      }
      const status = {
        ...current.status,
        ...(patch.k8s_job_name === undefined ? {} : { k8s_job_name: patch.k8s_job_name }),
        ...(patch.last_attempt_id === undefined ? {} : { last_attempt_id: patch.last_attempt_id }),
        ...(patch.error_message === undefined ? {} : { error_message: patch.error_message }),
        state: to ?? from,
        version: current.status.version + 1,
        updated_at: new Date().toISOString(),
      };
      if (to === 'running') await this.#ensureAttemptLocked(rid, status.last_attempt_id ?? DEFAULT_ATTEMPT_ID);
      // Re-read: starting the attempt changed the stored rollout.
      const base = to === 'running' ? await this.#require(rid) : rollout;
      const metadata: JsonObject = withV1Status(base, status);
      const updated =
        to === 'succeeded' || to === 'failed'
          ? await this.#store.updateRollout(rid, { status: to, metadata })
          : await this.#store.updateRollout(rid, { metadata });
      return toV1Rollout(updated);
    });
  }

  /** The completion log joined with the rollouts it names; entries deleted meanwhile are skipped like tombstones. */
  async terminal(query: { readonly after: number; readonly limit: number }): Promise<V1TerminalPage> {
    const page = await this.#store.queryCompletions(query);
    const live = page.items.filter((entry) => !entry.deleted);
    const rollouts = new Map<string, Rollout>();
    if (live.length > 0) {
      const found = await this.#store.queryRollouts({ rollout_id_in: [...new Set(live.map((e) => e.rollout_id))] });
      for (const r of found.items) rollouts.set(r.rollout_id, r);
    }
    const items: V1TerminalItem[] = [];
    for (const entry of live) {
      const rollout = rollouts.get(entry.rollout_id);
      // Deleted between the log read and this lookup; the cursor still moves on.
      if (rollout === undefined) continue;
      items.push({
        rollout_id: entry.rollout_id,
        state: v1StateOf(entry.status),
        data_id: dataIdOf(rollout.input),
        is_train: toV1Rollout(rollout).is_train,
      });
    }
    return { items, next_after: page.next_after, total_terminal: page.total };
  }

  async addEvent(
    rid: string,
    aid: string,
    event: { readonly eventType: string; readonly data: JsonObject },
  ): Promise<V1Event> {
    // Before the attempt is ensured: a refused event registers nothing.
    validateEventData(event.eventType, event.data);
    const attemptId = await this.ensureAttempt(rid, aid);
    const span = eventSpan({
      rolloutId: rid,
      attemptId,
      eventType: event.eventType,
      data: event.data,
      now: Date.now() / 1000,
    });
    const stored = await this.#store.addSpan(span);
    const added = stored === null ? null : spanToEvent(stored);
    if (added === null) throw new StoreError('conflict', 'The event collided with an existing span id');
    return added;
  }

  /** The events of the rollout's current attempt (`status.last_attempt_id`). */
  async events(rid: string, query: V1EventsQuery): Promise<V1Event[]> {
    const rollout = toV1Rollout(await this.#require(rid));
    const attemptId = rollout.status.last_attempt_id ?? DEFAULT_ATTEMPT_ID;
    const spans = await this.#store.querySpans(rid, { attempt_id: attemptId });
    let events: V1Event[] = [];
    for (const span of spans.items) {
      const event = spanToEvent(span);
      if (event !== null) events.push(event);
    }
    if (query.format === 'triplet') events = toTripletEvents(events);
    if (query.eventType !== undefined) events = events.filter((e) => e.event_type === query.eventType);
    return events;
  }

  async #require(rid: string): Promise<Rollout | AttemptedRollout> {
    const rollout = await this.#store.getRolloutById(rid);
    if (rollout === null) throw rolloutNotFound(rid);
    return rollout;
  }

  async #ensureAttemptLocked(rid: string, aid: string): Promise<string> {
    const checked = await this.#attribution.ensureOnExistingRollout(rid, aid);
    if (!checked.found) throw rolloutNotFound(rid);
    return aid;
  }
}
