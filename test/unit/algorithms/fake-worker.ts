// A stand-in runner for algorithm unit tests: every enqueue wakes it (no polling); it dequeues each rollout,
// runs `handler(task, resources)` and records the returned reward as a v0.3 reward span, then marks the
// attempt succeeded. `handler` returning 'hang' leaves the rollout running (a stuck agent).
import { rewardAttributes } from '../../../src/adapters/reward.js';
import type {
  AttemptedRollout,
  EnqueueRolloutRequest,
  JsonValue,
  LightningStore,
  NamedResources,
  Rollout,
} from '../../../src/store/core/types.js';

export type FakeHandler = (
  task: JsonValue,
  resources: NamedResources | null,
  rollout: AttemptedRollout,
) => Promise<number | 'hang'> | number | 'hang';

export interface FakeWorker {
  readonly store: LightningStore;
  readonly started: AttemptedRollout[];
  /** Resolves when everything dequeued so far has been handled. */
  idle(): Promise<void>;
}

export function withFakeWorker(inner: LightningStore, handler: FakeHandler): FakeWorker {
  const started: AttemptedRollout[] = [];
  const inflight = new Set<Promise<void>>();
  const runOne = async (rollout: AttemptedRollout) => {
    started.push(rollout);
    const resources = rollout.resources_id
      ? ((await inner.getResourcesById(rollout.resources_id))?.resources ?? null)
      : null;
    const reward = await handler(rollout.input, resources, rollout);
    if (reward === 'hang') return;
    await inner.addSpan({
      rollout_id: rollout.rollout_id,
      attempt_id: rollout.attempt.attempt_id,
      trace_id: 'b'.repeat(32),
      span_id: Math.floor(Math.random() * 2 ** 52)
        .toString(16)
        .padStart(16, '0'),
      parent_id: null,
      name: 'agentlightning.annotation',
      status: { status_code: 'OK' },
      attributes: rewardAttributes(reward),
      events: [],
      links: [],
      start_time: Date.now() / 1000,
      end_time: Date.now() / 1000,
      context: null,
      parent: null,
      resource: { attributes: {}, schema_url: '' },
    });
    await inner.updateAttempt(rollout.rollout_id, rollout.attempt.attempt_id, { status: 'succeeded' });
  };
  const drain = async () => {
    for (;;) {
      const claimed = await inner.dequeueRollout({ worker_id: 'fake' });
      if (!claimed) return;
      const p = runOne(claimed).finally(() => inflight.delete(p));
      inflight.add(p);
    }
  };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'enqueueManyRollouts') {
        return async (requests: EnqueueRolloutRequest[]): Promise<Rollout[]> => {
          const out = await target.enqueueManyRollouts(requests);
          void drain();
          return out;
        };
      }
      if (prop === 'enqueueRollout') {
        return async (request: EnqueueRolloutRequest): Promise<Rollout> => {
          const out = await target.enqueueRollout(request);
          void drain();
          return out;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store,
    started,
    async idle() {
      await Promise.all([...inflight]);
    },
  };
}
