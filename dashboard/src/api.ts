// Client of the public store API (/v1/agl/*, docs/store.md), plus the gateway's history rates
// (/metrics/history) and the RL trainer hub's state (/v1/rl/state). The dashboard reads nothing else.
import type { ModelHistoryStats } from '../../src/history-stats.js';
import type {
  Attempt,
  AttemptedRollout,
  PaginatedResult,
  ResourcesUpdate,
  Rollout,
  RolloutStatus,
  Span,
  StoreStatistics,
} from '../../src/store/core/types.js';
import type { RolloutReward, StoreSummary } from '../../src/store/summaries/store-summary.js';
import type { KeyStore } from './api-key.js';

export type QueryValue = string | number | readonly string[] | null | undefined;
export type Query = Readonly<Record<string, QueryValue>>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** 401 (no or bad key) and 403 (key without the needed scope): the user must give another key. */
export class AuthRequiredError extends ApiError {
  override name = 'AuthRequiredError';
}

export function isAuthError(error: unknown): error is AuthRequiredError {
  return error instanceof AuthRequiredError;
}

export function isAbortError(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}

export interface RolloutsQuery {
  readonly statusIn?: readonly RolloutStatus[];
  readonly idContains?: string;
  readonly limit: number;
  readonly offset: number;
  readonly sortBy?: string;
  readonly sortOrder?: 'asc' | 'desc';
}

export interface SpansQuery {
  readonly attemptId?: string;
  readonly spanId?: string;
  readonly nameContains?: string;
}

export interface StoreApi {
  rollouts(query: RolloutsQuery, signal?: AbortSignal): Promise<PaginatedResult<Rollout | AttemptedRollout>>;
  rollout(rolloutId: string, signal?: AbortSignal): Promise<Rollout | AttemptedRollout | null>;
  attempts(rolloutId: string, signal?: AbortSignal): Promise<PaginatedResult<Attempt>>;
  spans(rolloutId: string, query: SpansQuery, signal?: AbortSignal): Promise<PaginatedResult<Span>>;
  resources(query: { limit: number; offset: number }, signal?: AbortSignal): Promise<PaginatedResult<ResourcesUpdate>>;
  latestResources(signal?: AbortSignal): Promise<ResourcesUpdate | null>;
  statistics(signal?: AbortSignal): Promise<StoreStatistics>;
  /** Faithful history's fork and heal rates per model (the gateway's counters; empty without such pools). */
  historyStats(signal?: AbortSignal): Promise<readonly ModelHistoryStats[]>;
  /** Final rewards of up to 1000 rollouts in one request (a table page); absent ids are left out. */
  rewards(rolloutIds: readonly string[], signal?: AbortSignal): Promise<ReadonlyArray<RolloutReward>>;
  /** Statistics, rollouts per status and the newest finished rollouts with rewards, in one request. */
  summary(recent: number, signal?: AbortSignal): Promise<StoreSummary>;
  /** The RL trainer hub's state (GET /v1/rl/state: version, weight swaps); null when the gateway has none (404). */
  rlState(signal?: AbortSignal): Promise<unknown>;
}

function buildUrl(path: string, query: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === null || value === undefined || value === '') continue;
    if (Array.isArray(value)) {
      for (const item of value as readonly string[]) params.append(name, item);
    } else {
      params.append(name, String(value));
    }
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

function errorMessage(body: unknown, fallback: string): string {
  if (typeof body === 'object' && body !== null) {
    const record = body as Record<string, unknown>;
    const error = record.error;
    if (typeof error === 'object' && error !== null && typeof (error as Record<string, unknown>).message === 'string') {
      return (error as Record<string, string>).message ?? fallback;
    }
    if (typeof record.detail === 'string') return record.detail;
  }
  return fallback;
}

function isPage(value: unknown): value is PaginatedResult<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as Record<string, unknown>).items) &&
    typeof (value as Record<string, unknown>).total === 'number'
  );
}

export function createStoreApi(options: { keys: KeyStore; fetch?: typeof fetch }): StoreApi {
  const doFetch = options.fetch ?? window.fetch.bind(window);

  async function get(path: string, query: Query, signal?: AbortSignal): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const key = options.keys.get();
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const response = await doFetch(buildUrl(path, query), { headers, signal, credentials: 'omit' });
    const text = await response.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    if (response.status === 401 || response.status === 403) {
      throw new AuthRequiredError(response.status, errorMessage(body, `HTTP ${response.status}`));
    }
    if (!response.ok) throw new ApiError(response.status, errorMessage(body, `HTTP ${response.status} on ${path}`));
    return body;
  }

  async function page<T>(path: string, query: Query, signal?: AbortSignal): Promise<PaginatedResult<T>> {
    const body = await get(path, query, signal);
    if (!isPage(body)) throw new ApiError(502, `Unexpected answer from ${path}`);
    return body as PaginatedResult<T>;
  }

  const enc = encodeURIComponent;

  return {
    rollouts(query, signal) {
      return page(
        '/v1/agl/rollouts',
        {
          status_in: query.statusIn && query.statusIn.length > 0 ? query.statusIn : undefined,
          rollout_id_contains: query.idContains,
          limit: query.limit,
          offset: query.offset,
          sort_by: query.sortBy,
          sort_order: query.sortOrder,
        },
        signal,
      );
    },
    async rollout(rolloutId, signal) {
      return (await get(`/v1/agl/rollouts/${enc(rolloutId)}`, {}, signal)) as Rollout | AttemptedRollout | null;
    },
    attempts(rolloutId, signal) {
      return page(`/v1/agl/rollouts/${enc(rolloutId)}/attempts`, { limit: -1 }, signal);
    },
    spans(rolloutId, query, signal) {
      return page(
        '/v1/agl/spans',
        {
          rollout_id: rolloutId,
          attempt_id: query.attemptId,
          span_id: query.spanId,
          name_contains: query.nameContains,
          limit: -1,
        },
        signal,
      );
    },
    resources(query, signal) {
      return page(
        '/v1/agl/resources',
        {
          limit: query.limit,
          offset: query.offset,
          sort_by: 'update_time',
          sort_order: 'desc',
        },
        signal,
      );
    },
    async latestResources(signal) {
      return (await get('/v1/agl/resources/latest', {}, signal)) as ResourcesUpdate | null;
    },
    async statistics(signal) {
      return (await get('/v1/agl/statistics', {}, signal)) as StoreStatistics;
    },
    async rewards(rolloutIds, signal) {
      if (rolloutIds.length === 0) return [];
      const body = await get('/v1/agl/rewards', { rollout_id_in: rolloutIds }, signal);
      const items = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).items : null;
      if (!Array.isArray(items)) throw new ApiError(502, 'Unexpected answer from /v1/agl/rewards');
      return items as RolloutReward[];
    },
    async summary(recent, signal) {
      const body = await get('/v1/agl/summary', { recent }, signal);
      if (typeof body !== 'object' || body === null || !Array.isArray((body as Record<string, unknown>).recent)) {
        throw new ApiError(502, 'Unexpected answer from /v1/agl/summary');
      }
      return body as StoreSummary;
    },
    async rlState(signal) {
      try {
        return await get('/v1/rl/state', {}, signal);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    async historyStats(signal) {
      const body = await get('/metrics/history', {}, signal);
      const models = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).models : null;
      if (!Array.isArray(models)) throw new ApiError(502, 'Unexpected answer from /metrics/history');
      return models as ModelHistoryStats[];
    },
  };
}
