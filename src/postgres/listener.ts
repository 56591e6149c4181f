/**
 * One LISTEN connection per store instance, kept alive against silent failures: TCP keepalive, a
 * heartbeat that checks the LISTEN is still registered, and reconnection with jittered backoff.
 *
 * NOTIFY is only a hint. Whoever subscribes with `onStateChange` re-reads what it cares about every
 * time the listener reports `listening` again, because notifications sent while it was down are
 * lost.
 */
import pg from 'pg';
import { quoteIdentifier } from './schema-name.js';

export type ListenerState = 'connecting' | 'listening' | 'reconnecting' | 'closed';

export interface ListenerStateChange {
  state: ListenerState;
  /** Why the connection was lost or could not be made (`reconnecting` only). */
  error?: Error;
  /** The wait before the next attempt (`reconnecting` only). */
  retryInMs?: number;
}

interface NotificationListenerOptions {
  clientConfig: pg.ClientConfig;
  channel: string;
  /** How often to check that the LISTEN is still registered. Default 15 s. */
  heartbeatMs?: number;
  /** Reconnection backoff: full jitter between 0 and min(maxBackoffMs, minBackoffMs * 2^attempt). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** What pg_stat_activity shows for the connection. Default {@link LISTENER_APPLICATION_NAME}. */
  applicationName?: string;
}

/** The connections of stores and message queues, which the CLI's `status` counts. */
export const LISTENER_APPLICATION_NAME = 'mcp-task-store-listener';

/**
 * The listener a `listen` option asks for: none for `false`, else one on its own connection, made
 * from `listen.connectionString` or with the pool's own settings.
 */
export function listenerFor(
  listen: false | { connectionString?: string } | undefined,
  pool: pg.Pool,
  channel: string,
): NotificationListener | null {
  if (listen === false) return null;
  // A caller's pool of another `pg` copy, or a look-alike, may have no `options`: then libpq's defaults.
  const { max: _max, idleTimeoutMillis: _idle, ...poolSettings } = (pool as unknown as { options?: pg.PoolConfig }).options ?? {};
  const clientConfig = listen?.connectionString ? { connectionString: listen.connectionString } : poolSettings;
  return new NotificationListener({ clientConfig, channel });
}

export class NotificationListener {
  private client: pg.Client | null = null;
  private state: ListenerState = 'connecting';
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private readonly stateListeners = new Set<(change: ListenerStateChange) => void>();
  private readonly notificationListeners = new Set<(payload: string) => void>();
  private readonly heartbeatMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(private readonly options: NotificationListenerOptions) {
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.minBackoffMs = options.minBackoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
  }

  get isListening(): boolean {
    return this.state === 'listening';
  }

  get currentState(): ListenerState {
    return this.state;
  }

  onStateChange(callback: (change: ListenerStateChange) => void): () => void {
    this.stateListeners.add(callback);
    return () => this.stateListeners.delete(callback);
  }

  onNotification(callback: (payload: string) => void): () => void {
    this.notificationListeners.add(callback);
    return () => this.notificationListeners.delete(callback);
  }

  start(): void {
    if (this.state !== 'closed') void this.connect();
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.setState({ state: 'closed' });
    this.clearTimers();
    const client = this.client;
    this.client = null;
    if (!client) return;
    // A client still connecting (a slow DNS lookup, say) would end only once that is over, which
    // can take seconds: its socket goes at once.
    const socket = (client as unknown as { connection?: { stream?: { connecting?: boolean; destroy(): void } } }).connection?.stream;
    if (socket?.connecting) socket.destroy();
    await client.end().catch(() => {});
  }

  /** Never rejects: whatever goes wrong, from building the client on, schedules another attempt. */
  private async connect(): Promise<void> {
    let client: pg.Client | null = null;
    try {
      // Settings node-postgres cannot use (a malformed URL, a missing certificate file) throw here.
      client = new pg.Client({
        ...this.options.clientConfig,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        application_name: this.options.applicationName ?? LISTENER_APPLICATION_NAME,
      });
      const connecting = client;
      this.client = connecting;
      connecting.on('error', (error) => this.lost(connecting, error));
      connecting.on('end', () => this.lost(connecting, new Error('listener connection ended')));
      connecting.on('notification', (message) => {
        if (message.channel !== this.options.channel || message.payload === undefined) return;
        for (const callback of this.notificationListeners) notify(callback, message.payload);
      });
      await connecting.connect();
      await connecting.query(`LISTEN ${quoteIdentifier(this.options.channel)}`);
    } catch (error) {
      this.lost(client, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (this.client !== client) return;
    this.attempt = 0;
    this.heartbeatTimer = setInterval(() => void this.heartbeat(client), this.heartbeatMs).unref();
    this.setState({ state: 'listening' });
  }

  /** A LISTEN can vanish without the socket noticing (a pooler, a failover): check it is there. */
  private async heartbeat(client: pg.Client): Promise<void> {
    try {
      const { rows } = await client.query('SELECT 1 FROM pg_listening_channels() AS channel WHERE channel = $1', [
        this.options.channel,
      ]);
      if (rows.length === 0) throw new Error('the LISTEN registration is gone');
    } catch (error) {
      this.lost(client, error as Error);
    }
  }

  /** `client` is null when it could not even be built. */
  private lost(client: pg.Client | null, error: Error): void {
    if (this.client !== client || this.state === 'closed') return;
    this.client = null;
    this.clearTimers();
    if (client) {
      client.removeAllListeners('notification');
      // Keep an error listener: the dying socket may still emit, and an unhandled 'error' would crash.
      client.on('error', () => {});
      void client.end().catch(() => {});
    }
    const ceiling = Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** this.attempt);
    const retryInMs = Math.round(Math.random() * ceiling);
    this.attempt += 1;
    this.setState({ state: 'reconnecting', error, retryInMs });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, retryInMs).unref();
  }

  private clearTimers(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.retryTimer = null;
    this.heartbeatTimer = null;
  }

  private setState(change: ListenerStateChange): void {
    this.state = change.state;
    for (const callback of this.stateListeners) notify(callback, change);
  }
}

/**
 * Subscribers run inside socket events and timers, where a throw would be an uncaught exception
 * (or, inside connect(), an unhandled rejection): one subscriber's bug must not crash the host.
 */
function notify<T>(callback: (value: T) => void, value: T): void {
  try {
    callback(value);
  } catch {
    // The subscriber's own failure; the listener carries on.
  }
}
