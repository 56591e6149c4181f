/** `mcp-task-store reap`: one reaper pass now, with its counts and a progress line while a backlog drains. */
import { Reaper, type ReaperBatch } from '../../postgres/reaper.js';
import { parseCount, parseDuration } from '../arguments.js';
import { announce, printJson, type Command, type CommandContext } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { count, formatDuration } from '../format.js';

const DEFAULT_BATCH_SIZE = 1000;
const DEFAULT_RETENTION = '5m';
const DEFAULT_HISTORY_RETENTION = '7d';
/** Progress is shown once a pass needs more than one batch, then at most this often. */
const PROGRESS_EVERY_MS = 1000;

export const reapCommand: Command = {
  name: 'reap',
  summary: 'run one reaper pass now: tombstone expired tasks, purge old tombstones',
  description: `Runs one pass of the store's reaper: expired tasks become tombstones, and tombstones older than
the retention window are purged, and so are the histories of tasks gone for good that were
created longer ago than the history retention. It works in batches, as the stores' own reapers do, and never blocks live traffic; while a backlog drains, a progress line goes
to stderr every second. A phase another instance's reaper is running at the moment is
skipped (it counts 0): that reaper does the work.

Give --tombstone-retention and --history-retention the values your stores use (their
reaper.tombstoneRetentionMs and reaper.historyRetentionMs), or tombstones and history are
purged earlier or later than they would be.`,
  options: {
    'tombstone-retention': {
      type: 'string',
      value: '<duration>',
      help: `how long a tombstone is kept after its task expired (default ${DEFAULT_RETENTION}, the stores' default)`,
    },
    'history-retention': {
      type: 'string',
      value: '<duration>',
      help: `how long the history of a task gone for good is kept after its creation (default ${DEFAULT_HISTORY_RETENTION})`,
    },
    'batch-size': { type: 'string', value: '<n>', help: `rows per batch (default ${DEFAULT_BATCH_SIZE})` },
  },
  async run(context) {
    const retention = context.options['tombstone-retention'];
    const tombstoneRetentionMs = parseDuration('tombstone-retention', typeof retention === 'string' ? retention : DEFAULT_RETENTION);
    const historyRetention = context.options['history-retention'];
    const historyRetentionMs = parseDuration('history-retention', typeof historyRetention === 'string' ? historyRetention : DEFAULT_HISTORY_RETENTION);
    const batch = context.options['batch-size'];
    const batchSize = typeof batch === 'string' ? parseCount('batch-size', batch, 1_000_000) : DEFAULT_BATCH_SIZE;
    announce(context);
    const started = Date.now();
    const counts = await withDatabase(context, 1, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      const reaper = new Reaper(database, { tombstoneRetentionMs, historyRetentionMs, batchSize });
      reaper.onBatch(progressReporter(context, batchSize));
      return reaper.runOnce();
    });
    const durationMs = Date.now() - started;
    if (context.json) return printJson(context, { ...counts, durationMs });
    context.io.out(
      `tombstoned ${count(counts.tombstoned, 'expired task')}, purged ${count(counts.purged, 'tombstone')} ` +
        `and the history of ${count(counts.historyPurged, 'task')} (${formatDuration(durationMs)})`,
    );
  },
};

const PHASE_WORDS = { tombstone: 'tombstoned', purge: 'tombstones purged', history: 'histories purged' } as const;

/** Quiet for a pass that fits in a batch; then one stderr line per second with the totals so far. */
function progressReporter(context: CommandContext, batchSize: number): (done: ReaperBatch) => void {
  const totals = { tombstone: 0, purge: 0, history: 0 };
  let lastShown: number | null = null;
  return (done) => {
    totals[done.phase] += done.rows;
    if (lastShown === null && done.rows < batchSize) return;
    const now = Date.now();
    if (lastShown !== null && now - lastShown < PROGRESS_EVERY_MS) return;
    lastShown = now;
    const phases = (Object.keys(totals) as (keyof typeof totals)[]).filter((phase) => totals[phase] > 0);
    context.io.err(`reaping: ${phases.map((phase) => `${totals[phase]} ${PHASE_WORDS[phase]}`).join(', ')} so far…`);
  };
}
