// What the weight-update tests (two-step handshake, its survival, colocated sleep) share: one swap rig per test,
// closed after it, and the views of the gateway and the engine twin they read over HTTP.
import { afterEach } from 'vitest';
import { SWAP_POOL, SwapRig, type SwapRigOptions } from '../../helpers/swap-rig.js';

/** A starter for a test file whose tests each start one rig; each rig it started is closed after its test. */
export function swapRigPerTest(): (options: SwapRigOptions) => Promise<SwapRig> {
  let current: SwapRig | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (options) => {
    current = await SwapRig.start(options);
    return current;
  };
}

export async function getJson(url: string): Promise<Record<string, unknown>> {
  return (await (await fetch(url)).json()) as Record<string, unknown>;
}

/** The version /admin/pools shows for the swap pool (-1 when the pool is missing). */
export async function poolVersion(r: SwapRig): Promise<number> {
  const pools = (await getJson(`${r.gw.url}/admin/pools`)).pools as Array<{ model: string; version: number }>;
  return pools.find((p) => p.model === SWAP_POOL)?.version ?? -1;
}

export const gatewayPaused = async (r: SwapRig): Promise<boolean> =>
  (await getJson(`${r.gw.url}/admin/state`)).paused === true;

export const twinPaused = async (r: SwapRig): Promise<boolean> =>
  (await getJson(`${r.twin.baseUrl}/is_paused`)).is_paused === true;
