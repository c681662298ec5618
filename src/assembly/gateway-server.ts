// Binding the assembled app to its address and shutting it down: stop accepting, drain in-flight requests within
// the grace period, then close every part.
import type { RollgateConfig } from '../../config/schema.js';
import type { Logger } from '../logger.js';
import { type ListeningServer, listen } from '../server.js';
import type { GatewayParts } from './parts.js';

export interface GatewayServer {
  listen(): Promise<{ url: string; port: number }>;
  close(): Promise<void>;
}

export function createGatewayServer(options: {
  readonly fetch: (request: Request) => Response | Promise<Response>;
  readonly config: RollgateConfig;
  readonly logger: Logger;
  readonly shutdown: AbortController;
  readonly parts: GatewayParts;
}): GatewayServer {
  const { config, logger } = options;
  let listening: Promise<ListeningServer> | null = null;
  let closing: Promise<void> | null = null;
  return {
    async listen() {
      if (closing !== null) throw new Error('rollgate: gateway is closed');
      listening ??= listen({
        fetch: options.fetch,
        host: config.server.host,
        port: config.server.port,
        keepAliveTimeoutMs: config.server.keepAliveTimeoutMs,
        limits: {
          headersTimeoutMs: config.server.headersTimeoutMs,
          requestTimeoutMs: config.server.requestTimeoutMs,
          bodyIdleTimeoutMs: config.server.bodyIdleTimeoutMs,
          idleTimeoutMs: config.server.idleTimeoutMs,
          maxConnections: config.server.maxConnections ?? null,
        },
      });
      let bound: ListeningServer;
      try {
        bound = await listening;
      } catch (error) {
        listening = null;
        throw error;
      }
      logger.info('listening', { url: bound.url, port: bound.port });
      return { url: bound.url, port: bound.port };
    },
    close() {
      closing ??= (async () => {
        options.shutdown.abort();
        const pending = listening;
        if (pending !== null) {
          const bound = await pending.catch(() => null);
          await bound?.close({ graceMs: config.server.shutdownGraceMs });
        }
        await options.parts.closeAll(logger);
        logger.info('closed');
      })();
      return closing;
    },
  };
}
