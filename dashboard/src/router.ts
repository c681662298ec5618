// Client-side routes. The server answers each of these paths with index.html (routes/dashboard.ts
// keeps the same list), so deep links and reloads work.

export type RouteName = 'rollouts' | 'rollout' | 'call' | 'resources' | 'algorithm' | 'swaps' | 'not-found';

export interface Route {
  readonly name: RouteName;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function matchRoute(pathname: string, search: string): Route {
  const query = new URLSearchParams(search);
  const parts = pathname
    .split('/')
    .filter((p) => p.length > 0)
    .map(decode);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'rollouts')) {
    return { name: 'rollouts', params: {}, query };
  }
  if (parts[0] === 'rollouts' && parts.length === 2) return { name: 'rollout', params: { rid: parts[1] ?? '' }, query };
  if (parts[0] === 'rollouts' && parts.length === 4 && parts[2] === 'spans') {
    return { name: 'call', params: { rid: parts[1] ?? '', sid: parts[3] ?? '' }, query };
  }
  if (parts.length === 1 && parts[0] === 'resources') return { name: 'resources', params: {}, query };
  if (parts.length === 1 && parts[0] === 'algorithm') return { name: 'algorithm', params: {}, query };
  if (parts.length === 1 && parts[0] === 'swaps') return { name: 'swaps', params: {}, query };
  return { name: 'not-found', params: {}, query };
}

export const paths = {
  rollouts: (query?: URLSearchParams): string => {
    const search = query?.toString();
    return search ? `/rollouts?${search}` : '/rollouts';
  },
  rollout: (rid: string, attemptId?: string): string =>
    `/rollouts/${encodeURIComponent(rid)}${attemptId ? `?attempt=${encodeURIComponent(attemptId)}` : ''}`,
  call: (rid: string, spanId: string, attemptId?: string): string =>
    `/rollouts/${encodeURIComponent(rid)}/spans/${encodeURIComponent(spanId)}${
      attemptId ? `?attempt=${encodeURIComponent(attemptId)}` : ''
    }`,
  resources: (): string => '/resources',
  algorithm: (): string => '/algorithm',
  swaps: (): string => '/swaps',
};
