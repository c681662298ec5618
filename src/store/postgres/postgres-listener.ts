// One dedicated LISTEN connection per store. Notifications are sent with pg_notify inside the writing
// transaction, so PostgreSQL delivers them only after commit: a woken waiter always sees the new state.
// While the connection is down notifications are lost, so every (re)connect tells subscribers to re-check.
import pg from 'pg';
import type { Logger } from '../../logger.js';

export interface PostgresListenerOptions {
  /** Connection settings for the dedicated client (same as the pool's). */
  clientConfig: pg.ClientConfig;
  channel: string;
  logger: Logger;
  /** First reconnect delay; doubles up to maxReconnectDelayMs. */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
}

export interface PostgresListener {
  /** Resolves once the first LISTEN is in place (rejects if the first connection fails). */
  readonly ready: Promise<void>;
  /**
   * `onPayload` for each notification; `onLost` when the connection drops (notifications go unheard until the
   * next `onResync`); `onResync` after every reconnect (missed notifications).
   */
  subscribe(handlers: ListenerHandlers): () => void;
  close(): Promise<void>;
}

export interface ListenerHandlers {
  onPayload: (payload: string) => void;
  onLost?: () => void;
  onResync: () => void;
}

export function createPostgresListener(options: PostgresListenerOptions): PostgresListener {
  const { clientConfig, channel, logger } = options;
  const baseDelayMs = options.reconnectDelayMs ?? 100;
  const maxDelayMs = options.maxReconnectDelayMs ?? 5_000;
  const subscribers = new Set<ListenerHandlers>();
  let client: pg.Client | null = null;
  let closed = false;
  let delayMs = baseDelayMs;
  let timer: NodeJS.Timeout | null = null;
  let hasConnectedOnce = false;

  const quotedChannel = `"${channel.replaceAll('"', '""')}"`;

  function scheduleReconnect(): void {
    if (closed || timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      void connect().catch(() => undefined);
    }, delayMs);
    timer.unref();
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  }

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client(clientConfig);
    let failed = false;
    const onLost = (error?: Error): void => {
      if (failed) return;
      failed = true;
      if (client === c) client = null;
      c.removeAllListeners('notification');
      void c.end().catch(() => undefined);
      // Before the first LISTEN succeeded the failure belongs to `ready` (the store does not open); after it,
      // keep trying in the background.
      if (!closed && hasConnectedOnce) {
        logger.warn('postgres listener connection lost', { channel, error: error?.message });
        for (const s of subscribers) s.onLost?.();
        scheduleReconnect();
      }
    };
    c.on('error', onLost);
    c.on('end', () => onLost());
    c.on('notification', (msg) => {
      if (msg.channel !== channel || msg.payload === undefined) return;
      for (const s of subscribers) s.onPayload(msg.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${quotedChannel}`);
    } catch (error: unknown) {
      onLost(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    delayMs = baseDelayMs;
    if (hasConnectedOnce) {
      logger.info('postgres listener reconnected', { channel });
      for (const s of subscribers) s.onResync();
    }
    hasConnectedOnce = true;
  }

  const ready = connect();
  // The first failure is reported through `ready`; later retries run in the background.
  ready.catch(() => undefined);

  return {
    ready,
    subscribe(handlers) {
      subscribers.add(handlers);
      return () => {
        subscribers.delete(handlers);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      subscribers.clear();
      const c = client;
      client = null;
      if (c !== null) {
        c.removeAllListeners('notification');
        await c.end().catch(() => undefined);
      }
    },
  };
}
