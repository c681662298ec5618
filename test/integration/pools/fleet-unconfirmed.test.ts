// A replica that cannot confirm the fleet's state serves nothing (docs/store.md, "A fleet of gateways"): while it
// cannot hear of writes (its database connection is down) or after its own update failed to reach the store, new
// calls get 503 no_backend with Retry-After and /ready says why; once it hears again and has read the record, it
// serves what the record says (its own unshared update undone). The store's connection is the one thing simulated
// here: a fleet record whose connection the test can drop and restore, in front of the in-process record.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import {
  type FleetChange,
  type FleetState,
  type FleetStateStore,
  type FleetStateSubscriber,
  LocalFleetState,
} from '../../../src/store/core/fleet-state.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

const MODEL = 'mock-model';

/** The record of a store whose connection can drop: nothing reaches it, and no write is heard, until restored. */
class DroppableFleet implements FleetStateStore {
  readonly #inner = new LocalFleetState();
  readonly #subscribers = new Set<FleetStateSubscriber>();
  #down = false;

  constructor() {
    this.#inner.subscribe({
      onChange: () => {
        if (!this.#down) for (const s of this.#subscribers) s.onChange();
      },
      onLost: () => undefined,
      onResync: () => undefined,
    });
  }

  drop(): void {
    this.#down = true;
    for (const s of this.#subscribers) s.onLost();
  }

  restore(): void {
    this.#down = false;
    for (const s of this.#subscribers) s.onResync();
  }

  read(): Promise<FleetState> {
    return this.#down ? Promise.reject(new Error('connection refused')) : this.#inner.read();
  }

  write(change: FleetChange): Promise<FleetState> {
    return this.#down ? Promise.reject(new Error('connection refused')) : this.#inner.write(change);
  }

  subscribe(subscriber: FleetStateSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }
}

describe('a replica that cannot confirm the fleet state', () => {
  let mock: MockVllm;
  let fleet: DroppableFleet;
  let store: MemoryStore;
  let gw: TestGateway;
  let counter = 0;

  beforeEach(async () => {
    mock = await startMockVllm({ model: MODEL, anyModel: true });
    fleet = new DroppableFleet();
    store = Object.assign(new MemoryStore(), { fleet });
    gw = await startTestGateway(
      { models: [{ name: MODEL, version: 1, backends: [{ url: mock.url }], health: { intervalMs: 0 } }] },
      { store },
    );
  });

  afterEach(async () => {
    await gw.close();
    await store.close();
    await mock.close();
  });

  function call(): Promise<Response> {
    counter++;
    return fetch(`${gw.url}/rollout/ro-unconfirmed-${counter}/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `call ${counter}` }], max_tokens: 2 }),
    });
  }

  async function until(check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('refuses calls with 503 and Retry-After while the store connection is down, and serves once it is back', async () => {
    expect((await call()).status).toBe(200);
    fleet.drop();
    const refused = await call();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    const body = (await refused.json()) as { error: { code: string } };
    expect(body.error.code).toBe('no_backend');
    const ready = await fetch(`${gw.url}/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toMatch(/cannot be confirmed/);
    const state = (await (await fetch(`${gw.url}/admin/state`)).json()) as { fleet: { confirmed: boolean } };
    expect(state.fleet.confirmed).toBe(false);
    expect(mock.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(1);

    fleet.restore();
    await until(async () => (await fetch(`${gw.url}/ready`)).status === 200);
    expect((await call()).status).toBe(200);
    const back = (await (await fetch(`${gw.url}/admin/state`)).json()) as { fleet: { confirmed: boolean } };
    expect(back.fleet.confirmed).toBe(true);
  });

  it('an update that cannot be shared fails, and the replica goes back to what the fleet serves', async () => {
    fleet.drop();
    const put = await fetch(`${gw.url}/admin/pools/${MODEL}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: 2, backends: [{ url: mock.url }] }),
    });
    expect(put.status).toBe(503);
    expect((await call()).status).toBe(503);

    fleet.restore();
    await until(async () => (await fetch(`${gw.url}/ready`)).status === 200);
    const pools = (await (await fetch(`${gw.url}/admin/pools`)).json()) as { pools: Array<{ version: number }> };
    expect(pools.pools[0]?.version).toBe(1);
    const served = await call();
    expect(served.status).toBe(200);
    const [span] = (await store.querySpans(`ro-unconfirmed-${counter}`)).items;
    expect(span?.attributes[A.ATTR_MODEL_VERSION]).toBe(1);
  });
});
