/** `mcp-task-store watch`: tasks as they change, until SIGINT or SIGTERM. */
import { toBackendError } from '../../postgres/backend-error.js';
import { NotificationListener, type ListenerStateChange } from '../../postgres/listener.js';
import { notificationChannel } from '../../postgres/schema-name.js';
import { parseDuration } from '../arguments.js';
import { announce, CliError, type Command, type CommandContext } from '../command.js';
import { CLI_APPLICATION_NAME, requireMigrated, withDatabase } from '../database.js';
import { formatDuration, formatOwner, formatTable, formatTime, truncate } from '../format.js';
import { TaskFeed, type TaskChange } from '../task-feed.js';

const DEFAULT_INTERVAL = '2s';
const MIN_INTERVAL_MS = 100;
/** The changes a terminal view keeps on screen. */
const SCREEN_CHANGES = 20;

export const watchCommand: Command = {
  name: 'watch',
  summary: 'follow tasks as they change, live, until Ctrl-C',
  description: `Shows tasks as they are created, change status or message, are cancelled, expire or are
discarded. On a terminal the view is redrawn in place with the latest changes; otherwise (and
with --json, one JSON document per line) each change is one line. Stops on Ctrl-C (SIGINT) or
SIGTERM, exit code 0.

The store's NOTIFY announces only some changes (cancellation, ttl, deletion, and the status
of tasks a waiter awaits), so watch also re-reads the tasks updated since its last look every
--interval. Each re-read scans the tasks table: on millions of rows, choose a longer interval.`,
  options: {
    interval: { type: 'string', value: '<duration>', help: `how often to re-read changed tasks (default ${DEFAULT_INTERVAL})` },
  },
  async run(context) {
    const intervalMs = parseDuration('interval', typeof context.options.interval === 'string' ? context.options.interval : DEFAULT_INTERVAL);
    if (intervalMs < MIN_INTERVAL_MS) throw new CliError('usage', `--interval ${context.options.interval}: at least ${MIN_INTERVAL_MS}ms`);
    if (!context.io.interactive) announce(context);
    await withDatabase(context, 2, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      const view = context.json ? jsonView(context) : context.io.interactive ? screenView(context, intervalMs) : logView(context, intervalMs);
      const feed = new TaskFeed(database, view.show);
      await feed.start();
      const listener = new NotificationListener({
        clientConfig: { connectionString: context.connectionString, connectionTimeoutMillis: 10_000 },
        channel: notificationChannel(context.schema),
        applicationName: CLI_APPLICATION_NAME,
      });
      const reads = serialReads(context, () => feed.read());
      listener.onNotification((payload) => {
        feed.notify(payload);
        reads.request();
      });
      listener.onStateChange(view.listener);
      const stopped = new Promise<void>((resolve) => {
        const unsubscribe = context.io.onStop(() => {
          unsubscribe();
          resolve();
        });
      });
      listener.start();
      const timer = setInterval(() => reads.request(), intervalMs);
      reads.request();
      await stopped;
      clearInterval(timer);
      await listener.close();
      await reads.idle();
    });
  },
};

interface View {
  show(change: TaskChange): void;
  listener(change: ListenerStateChange): void;
}

function jsonView(context: CommandContext): View {
  return { show: (change) => context.io.out(JSON.stringify(change)), listener: (change) => reportListener(context, change) };
}

function logView(context: CommandContext, intervalMs: number): View {
  context.io.out(`watching tasks (NOTIFY, and a re-read every ${formatDuration(intervalMs)}); Ctrl-C to stop`);
  // Lines printed one at a time cannot be measured as a table: the short columns get fixed widths.
  const widths = [0, 0, 'expired'.length, 'input_required → completed'.length];
  const line = (change: TaskChange) => changeCells(change).map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ');
  return { show: (change) => context.io.out(line(change)), listener: (change) => reportListener(context, change) };
}

/** A terminal: the header, the listener's state and the latest changes, redrawn on each change. */
function screenView(context: CommandContext, intervalMs: number): View {
  const changes: TaskChange[] = [];
  let listening = 'connecting';
  const draw = () => {
    const table = formatTable(['AT', 'TASK', 'CHANGE', 'STATUS', 'TOOL', 'OWNER', 'MESSAGE'], changes.map(changeCells));
    const state = `listener ${listening}; re-read every ${formatDuration(intervalMs)}; Ctrl-C to stop`;
    context.io.out(`\x1b[H\x1b[2J${[context.header, state, '', ...(changes.length > 0 ? table : ['no changes yet'])].join('\n')}`);
  };
  draw();
  return {
    show: (change) => {
      changes.unshift(change);
      changes.length = Math.min(changes.length, SCREEN_CHANGES);
      draw();
    },
    listener: (change) => {
      listening = change.state === 'reconnecting' ? `reconnecting (${change.error?.message})` : change.state;
      if (change.state !== 'closed') draw();
    },
  };
}

function changeCells(change: TaskChange): string[] {
  const status =
    change.previousStatus && change.previousStatus !== change.status ? `${change.previousStatus} → ${change.status ?? 'gone'}` : change.status ?? 'gone';
  return [
    formatTime(change.at),
    change.taskId,
    change.change,
    status,
    change.toolName ?? '-',
    formatOwner(change.owner),
    change.cancelRequestedAt ? `cancel requested; ${truncate(change.statusMessage, 50)}` : truncate(change.statusMessage, 60),
  ];
}

/** Off the terminal, the listener's comings and goings go to stderr, apart from the changes. */
function reportListener(context: CommandContext, change: ListenerStateChange): void {
  if (change.state === 'listening') context.io.err('watch: listening for notifications');
  if (change.state === 'reconnecting') {
    const reason = toBackendError(change.error, context.connectionString).message;
    context.io.err(`watch: listener lost (${reason}); reconnecting in ${formatDuration(change.retryInMs ?? 0)}`);
  }
}

/**
 * One read at a time: a request while one runs makes one more afterwards. A failed read is
 * reported once, until a read succeeds again; the next request tries again.
 */
function serialReads(context: CommandContext, read: () => Promise<void>) {
  let running: Promise<void> | null = null;
  let again = false;
  let failing = false;
  const run = async (): Promise<void> => {
    do {
      again = false;
      try {
        await read();
        if (failing) context.io.err('watch: reading again');
        failing = false;
      } catch (error) {
        if (!failing) context.io.err(`watch: ${toBackendError(error, context.connectionString).message}; trying again`);
        failing = true;
      }
    } while (again);
    running = null;
  };
  return {
    request(): void {
      if (running) again = true;
      else running = run();
    },
    idle: async (): Promise<void> => {
      again = false;
      await running;
    },
  };
}
