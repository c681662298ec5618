// DNS rebinding guard for a keyless gateway on a loopback address. Such a gateway trusts every caller (no keys),
// which is safe only because nothing but the local machine reaches it; but a web page can point a host name it
// controls at 127.0.0.1 and then talk to the gateway as a same-origin site. Its requests still carry that foreign
// name in Host, so only loopback names (and the ones listed in server.allowedHosts) are answered.
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../src/errors.js';
import type { AppEnv } from './env.js';

export interface HostGuardOptions {
  /** Names answered besides the loopback ones; "*" answers any. */
  readonly allowedHosts: readonly string[];
}

const IPV4_LOOPBACK = /^127(?:\.\d{1,3}){3}$/;

/** The host name of a Host header value: lower case, without the port, IPv6 without brackets. */
export function hostName(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end < 0 ? value : value.slice(1, end);
  }
  const colon = value.indexOf(':');
  // A bare IPv6 address has several colons and no port we could tell apart.
  if (colon >= 0 && value.indexOf(':', colon + 1) < 0) return value.slice(0, colon);
  return value;
}

/** localhost, *.localhost (RFC 6761: always the loopback), 127.0.0.0/8 and ::1. */
export function isLoopbackHost(host: string): boolean {
  const name = hostName(host);
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    IPV4_LOOPBACK.test(name) ||
    name === '::1' ||
    name === '0:0:0:0:0:0:0:1'
  );
}

export function hostGuard(options: HostGuardOptions): MiddlewareHandler<AppEnv> {
  const anyHost = options.allowedHosts.includes('*');
  const allowed = new Set(options.allowedHosts.map((host) => hostName(host)));
  return async function hostGuardMiddleware(c, next) {
    if (anyHost) return next();
    // Without a Host header (in-process app.request) the URL holds the name the request was made for.
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (isLoopbackHost(host) || allowed.has(hostName(host))) return next();
    throw new GatewayError(
      'host_not_allowed',
      `Host ${JSON.stringify(host)} is not allowed: a gateway without keys answers loopback names only ` +
        '(list more in server.allowedHosts)',
      { param: 'host' },
    );
  };
}
