// The `routing` key of a model pool (docs/routing.md): which backend a call goes to. Kept apart from schema.ts so
// the routing settings and their meaning live in one place.
import { z } from 'zod';

export const ROUTING_POLICIES = ['sticky-least-loaded', 'hash', 'round-robin'] as const;
export type RoutingPolicy = (typeof ROUTING_POLICIES)[number];

export const routingSchema = z
  .object({
    policy: z
      .enum(ROUTING_POLICIES)
      .default('sticky-least-loaded')
      .describe(
        'sticky-least-loaded = a rollout stays on the backend it started on (prefix-cache reuse) until that backend ' +
          'carries maxImbalance more calls than the least-loaded healthy one, new rollouts go to the least-loaded; ' +
          'hash = the v1 sha256 hash of the rollout id over the sorted backend URLs, blind to load, identical on ' +
          'every gateway replica; round-robin = every call to the next backend (no prefix-cache reuse)',
      ),
    maxImbalance: z
      .int()
      .min(1)
      .default(4)
      .describe(
        'sticky-least-loaded: a rollout keeps its backend while sending the call there leaves that backend at most ' +
          'this many in-flight calls above the least-loaded healthy backend; otherwise it moves to the least-loaded',
      ),
    rolloutIdleMs: z
      .number()
      .positive()
      .default(600_000)
      .describe('A rollout with no call in flight for this long is forgotten (its next call is routed as new)'),
    maxRollouts: z
      .int()
      .min(1)
      .default(100_000)
      .describe('At most this many rollouts are remembered per pool; the least recently used is forgotten first'),
  })
  .strict();

export type RoutingConfig = z.infer<typeof routingSchema>;
