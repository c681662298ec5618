// How much one request may ask of the store (docs/input-limits.md). Each number leaves the largest real request
// room to spare and keeps one request's work to what the store can do in slices without holding the event loop
// that relays every other caller's call.
export const REQUEST_LIMITS = {
  /**
   * Rollouts in one enqueue. Trainers enqueue a step's tasks at once: thousands, not tens of thousands; HttpStore
   * sends a larger enqueue as several requests.
   */
  enqueueRollouts: 5_000,
  /** Rollout ids in one wait. */
  waitRolloutIds: 10_000,
  /** Rollout ids one rollout query filters on (`rollout_id_in`); a page holds at most 1,000 anyway. */
  rolloutIdsPerQuery: 10_000,
  /** Spans in one OTLP export: eight times the 512 an SDK batch processor sends at most by default. */
  otlpSpans: 4_096,
} as const;
