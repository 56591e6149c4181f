/**
 * The dashboard's one view of changes, shared by every browser connected to it: ONE listener
 * connection for the whole process, however many pages are open, and one {@link TaskFeed} (watch's
 * NOTIFY and re-reads) whose findings go to every subscriber.
 *
 * A NOTIFY is a hint: it names a task to read again, never what changed. Notifications and the
 * periodic re-read only ask for a read; reads run one at a time, at least `coalesceMs` apart, so a
 * burst of changes costs one read and reaches the pages as one `changes` event. The header's
 * counts are read again after a read that found changes, at most once every `summaryMs`.
 *
 * With no page connected nothing is read (notifications are ignored: a page that connects reads
 * everything first). After the listener reconnects the pages are told to read everything again,
 * since what was announced meanwhile is lost.
 */
import { NotificationListener, type ListenerStateChange } from '../../postgres/listener.js';
import { notificationChannel } from '../../postgres/schema-name.js';
import type { CliDatabase } from '../database.js';
import { TaskFeed, type TaskChange } from '../task-feed.js';
import type { FeedEvents, FeedState, SummaryJson } from './client/wire.js';

/** What pg_stat_activity shows for the dashboard's listener connection. */
export const DASHBOARD_LISTENER_APPLICATION_NAME = 'mcp-task-store-dashboard';
/** A notification waits this long for the rest of its burst before the read it asks for. */
const GATHER_MS = 20;

export type FeedEvent = { [Name in keyof FeedEvents]: { name: Name; data: FeedEvents[Name] } }[keyof FeedEvents];
export type Subscriber = (event: FeedEvent) => void;

export interface LiveFeedOptions {
  connectionString: string;
  schema: string;
  /** How often the rows updated since the last read are read again (what NOTIFY does not announce). */
  intervalMs: number;
  /** The least time between two reads. Default 100. */
  coalesceMs?: number;
  /** The least time between two reads of the header's counts. Default 1000. */
  summaryMs?: number;
  /** Reads the header's counts; the feed adds its state. */
  readSummary(): Promise<Omit<SummaryJson, 'feed'>>;
}

export class LiveFeed {
  private readonly subscribers = new Set<Subscriber>();
  private readonly listener: NotificationListener;
  private readonly feed: TaskFeed;
  private readonly coalesceMs: number;
  private readonly summaryMs: number;
  private batch: TaskChange[] = [];
  private listenerState: ListenerStateChange['state'] = 'connecting';
  private readFailing = false;
  private lostListener = false;
  /** The feed's starting point, taken again whenever a first page connects. */
  private baseline: Promise<void> | null = null;
  private reading: Promise<void> | null = null;
  private again = false;
  private lastReadEnd = 0;
  private lastSummaryAt = 0;
  private readTimer: NodeJS.Timeout | null = null;
  private summaryTimer: NodeJS.Timeout | null = null;
  private intervalTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    database: CliDatabase,
    private readonly options: LiveFeedOptions,
  ) {
    this.coalesceMs = options.coalesceMs ?? 100;
    this.summaryMs = options.summaryMs ?? 1000;
    this.feed = new TaskFeed(database, (change) => this.batch.push(change));
    this.listener = new NotificationListener({
      clientConfig: { connectionString: options.connectionString, connectionTimeoutMillis: 10_000 },
      channel: notificationChannel(options.schema),
      applicationName: DASHBOARD_LISTENER_APPLICATION_NAME,
    });
    this.listener.onNotification((payload) => {
      if (this.subscribers.size === 0) return;
      this.feed.notify(payload);
      this.request();
    });
    this.listener.onStateChange((change) => this.listenerChanged(change));
  }

  start(): void {
    this.listener.start();
  }

  get state(): FeedState {
    if (this.listenerState === 'listening' && this.readFailing) return 'stale';
    return this.listenerState;
  }

  get connected(): number {
    return this.subscribers.size;
  }

  /** Sends `subscriber` every event from now on; returns the function that stops it. */
  subscribe(subscriber: Subscriber): () => void {
    this.subscribers.add(subscriber);
    if (this.subscribers.size === 1) this.resume();
    return () => {
      if (!this.subscribers.delete(subscriber) || this.subscribers.size > 0) return;
      if (this.intervalTimer) clearInterval(this.intervalTimer);
      this.intervalTimer = null;
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of [this.readTimer, this.summaryTimer]) if (timer) clearTimeout(timer);
    if (this.intervalTimer) clearInterval(this.intervalTimer);
    this.subscribers.clear();
    await this.listener.close();
    await this.reading;
  }

  private resume(): void {
    this.baseline = null;
    this.intervalTimer = setInterval(() => this.request(), this.options.intervalMs);
    this.request();
  }

  /** A read soon: after the rest of a burst, and `coalesceMs` after the previous read. */
  private request(): void {
    if (this.closed || this.subscribers.size === 0) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    if (this.readTimer) return;
    const wait = Math.max(GATHER_MS, this.lastReadEnd + this.coalesceMs - Date.now());
    this.readTimer = setTimeout(() => {
      this.readTimer = null;
      this.reading = this.read();
    }, wait);
  }

  private async read(): Promise<void> {
    const failing = this.readFailing;
    try {
      this.baseline ??= this.feed.start();
      await this.baseline;
      await this.feed.read();
      this.readFailing = false;
    } catch {
      this.baseline = null; // a failed start is taken again; a failed read keeps its notified ids
      this.readFailing = true;
    }
    const changes = this.batch;
    this.batch = [];
    if (changes.length > 0) {
      this.broadcast({ name: 'changes', data: JSON.parse(JSON.stringify(changes)) });
      this.requestSummary();
    }
    if (failing !== this.readFailing) this.broadcast({ name: 'feed', data: { state: this.state } });
    this.reading = null;
    this.lastReadEnd = Date.now();
    if (this.again) {
      this.again = false;
      this.request();
    }
  }

  private requestSummary(): void {
    if (this.summaryTimer || this.closed) return;
    const wait = Math.max(0, this.lastSummaryAt + this.summaryMs - Date.now());
    this.summaryTimer = setTimeout(() => {
      this.lastSummaryAt = Date.now();
      this.options
        .readSummary()
        .then((summary) => this.broadcast({ name: 'summary', data: { ...summary, feed: this.state } }))
        .catch(() => {}) // the next change asks again; the pages keep the counts they have
        .finally(() => (this.summaryTimer = null));
    }, wait);
  }

  private listenerChanged(change: ListenerStateChange): void {
    this.listenerState = change.state;
    if (change.state === 'reconnecting') this.lostListener = true;
    this.broadcast({ name: 'feed', data: { state: this.state } });
    if (change.state === 'listening' && this.lostListener) {
      this.lostListener = false;
      this.broadcast({ name: 'refresh', data: { reason: 'the listener reconnected: changes announced meanwhile were lost' } });
      this.request();
    }
  }

  private broadcast(event: FeedEvent): void {
    for (const subscriber of this.subscribers) subscriber(event);
  }
}
