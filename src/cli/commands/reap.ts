/** `mcp-task-store reap`: one reaper pass now, with its counts and a progress line while a backlog drains. */
import { Reaper, type ReaperBatch } from '../../postgres/reaper.js';
import { parseCount, parseDuration } from '../arguments.js';
import { announce, printJson, type Command, type CommandContext } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { count, formatDuration } from '../format.js';

const DEFAULT_BATCH_SIZE = 1000;
const DEFAULT_RETENTION = '5m';
/** Progress is shown once a pass needs more than one batch, then at most this often. */
const PROGRESS_EVERY_MS = 1000;

export const reapCommand: Command = {
  name: 'reap',
  summary: 'run one reaper pass now: tombstone expired tasks, purge old tombstones',
  description: `Runs one pass of the store's reaper: expired tasks become tombstones, and tombstones older than
the retention window are purged with their history. It works in batches, as the stores'
own reapers do, and never blocks live traffic; while a backlog drains, a progress line goes
to stderr every second. A phase another instance's reaper is running at the moment is
skipped (it counts 0): that reaper does the work.

Give --tombstone-retention the value your stores use (their reaper.tombstoneRetentionMs),
or tombstones are purged earlier or later than they would be.`,
  options: {
    'tombstone-retention': {
      type: 'string',
      value: '<duration>',
      help: `how long a tombstone is kept after its task expired (default ${DEFAULT_RETENTION}, the stores' default)`,
    },
    'batch-size': { type: 'string', value: '<n>', help: `rows per batch (default ${DEFAULT_BATCH_SIZE})` },
  },
  async run(context) {
    const retention = context.options['tombstone-retention'];
    const tombstoneRetentionMs = parseDuration('tombstone-retention', typeof retention === 'string' ? retention : DEFAULT_RETENTION);
    const batch = context.options['batch-size'];
    const batchSize = typeof batch === 'string' ? parseCount('batch-size', batch, 1_000_000) : DEFAULT_BATCH_SIZE;
    announce(context);
    const started = Date.now();
    const counts = await withDatabase(context, 1, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      const reaper = new Reaper(database, { tombstoneRetentionMs, batchSize });
      const totals = { tombstoned: 0, purged: 0, historyPurged: 0 };
      const progress = progressReporter(context, batchSize, totals);
      reaper.onBatch((done) => {
        totals[PHASE_TOTALS[done.phase]] += done.rows;
        progress(done);
      });
      await reaper.runOnce();
      return totals;
    });
    const durationMs = Date.now() - started;
    if (context.json) return printJson(context, { ...counts, durationMs });
    context.io.out(
      `tombstoned ${count(counts.tombstoned, 'expired task')}, purged ${count(counts.purged, 'tombstone')} ` +
        `and ${count(counts.historyPurged, 'history row')} (${formatDuration(durationMs)})`,
    );
  },
};

const PHASE_TOTALS = { tombstone: 'tombstoned', purge: 'purged', history: 'historyPurged' } as const;

/** Quiet for a pass that fits in a batch; then one stderr line per second with the totals so far. */
function progressReporter(context: CommandContext, batchSize: number, totals: Record<(typeof PHASE_TOTALS)[keyof typeof PHASE_TOTALS], number>) {
  let lastShown: number | null = null;
  return (done: ReaperBatch) => {
    if (done.phase === 'history' || (lastShown === null && done.rows < batchSize)) return;
    const now = Date.now();
    if (lastShown !== null && now - lastShown < PROGRESS_EVERY_MS) return;
    lastShown = now;
    context.io.err(`reaping: ${totals.tombstoned} tombstoned, ${totals.purged} purged so far…`);
  };
}
