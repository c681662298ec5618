// The node HTTP listener for a fetch-style app: keep-alive tuned for long-lived clients (docs/failure-classes.md#23), a clear
// error for an occupied port (docs/failure-classes.md#63), a bounded graceful close, and the per-connection guards (stalled
// clients cut, connections bounded, parser errors answered: connection-guards.ts).

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import {
  type ConnectionLimits,
  guardConnections,
  guardRequests,
  serverOptions,
  unservableRequestAnswer,
} from './connection-guards.js';

export interface ListenOptions {
  readonly fetch: (request: Request) => Response | Promise<Response>;
  readonly host: string;
  readonly port: number;
  /** Idle keep-alive sockets are kept this long; clients pool sockets for minutes (>= 120 s by default). */
  readonly keepAliveTimeoutMs: number;
  /** Client deadlines and the connection limit; absent: Node's own header and request deadlines, no guards. */
  readonly limits?: ConnectionLimits;
}

export interface ListeningServer {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts what is left. */
  close(options: { graceMs: number }): Promise<void>;
}

export async function listen(options: ListenOptions): Promise<ListeningServer> {
  const limits = options.limits;
  // What @hono/node-server cannot turn into a Request (no Host, `OPTIONS *`) is answered in the API's shape.
  const listener = getRequestListener(options.fetch, { errorHandler: unservableRequestAnswer });
  const server = createServer(
    limits === undefined ? {} : serverOptions(limits, options.keepAliveTimeoutMs),
    guardRequests(listener),
  );
  // Node's header deadline does not run while a keep-alive socket sits idle between requests (it starts with the
  // next request's first byte), so it can be far shorter than keepAliveTimeout.
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  if (limits !== undefined) guardConnections(server, limits);

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      const where = `${options.host}:${options.port}`;
      const reason =
        error.code === 'EADDRINUSE'
          ? `port ${options.port} is already in use (${where})`
          : error.code === 'EACCES'
            ? `permission denied to bind port ${options.port} (${where})`
            : `cannot listen on port ${options.port} (${where}): ${error.message}`;
      reject(new Error(`rollgate: ${reason}`, { cause: error }));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(options.port, options.host);
  });

  const address = server.address() as AddressInfo;
  const unused = trackUnusedConnections(server);
  return {
    url: `http://${urlHost(options.host)}:${address.port}`,
    port: address.port,
    server,
    close: ({ graceMs }) => closeServer(server, unused, graceMs),
  };
}

/**
 * Connections that have not carried a request yet. Node's closeIdleConnections() leaves them open (a client
 * that opened a connection ahead of time, or aborted a request before sending it), so a drain would wait the
 * whole grace period for them; they hold no work, so closing them loses nothing.
 */
function trackUnusedConnections(server: Server): Set<Socket> {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: IncomingMessage) => {
    unused.delete(request.socket);
  });
  return unused;
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** While draining, sockets whose last response just finished sit idle in keep-alive; close them as they appear. */
const IDLE_SWEEP_MS = 50;

function closeServer(server: Server, unused: Set<Socket>, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const closeIdle = (): void => {
      server.closeIdleConnections();
      for (const socket of unused) socket.destroy();
    };
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    force.unref();
    const sweep = setInterval(closeIdle, IDLE_SWEEP_MS);
    sweep.unref();
    server.close(() => {
      clearTimeout(force);
      clearInterval(sweep);
      resolve();
    });
    closeIdle();
  });
}
