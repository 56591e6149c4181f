/** `mcp-task-store status`: the schema's version and what the store holds, at a glance. */
import { Migrator } from 'kysely';
import { migratorOptions } from '../../postgres/migrate.js';
import { announce, printJson, type Command } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { formatDuration, formatFields, formatOwner, formatTime } from '../format.js';
import { listenerConnections, oldestWorking, reaperActivity, storeCounts, TASK_STATUSES, type ReaperActivity } from '../operator-queries.js';

export const statusCommand: Command = {
  name: 'status',
  summary: 'schema version, pending migrations, tasks by status, reaper backlog, listeners',
  description: `Shows the schema's version (its latest applied migration) and the migrations still pending;
live tasks by status; expired rows awaiting the reaper; tombstones; the oldest working task
and how long it has run; the listener connections to the database (store instances and SDK
message queues, of every schema: PostgreSQL does not say what a connection listens to);
and what the reapers last did, where the schema records it.

Counting reads the whole tasks table: cheap for thousands of rows, seconds for millions.`,
  options: {},
  async run(context) {
    announce(context);
    const status = await withDatabase(context, 4, async (database) => {
      const state = await requireMigrated(database, { allowBehind: true });
      const [migrations, counts, oldest, listeners, reaper] = await Promise.all([
        new Migrator({ db: database.db, ...migratorOptions(context.schema) }).getMigrations(),
        storeCounts(database),
        oldestWorking(database),
        listenerConnections(database),
        reaperActivity(database),
      ]);
      const applied = migrations.filter((migration) => migration.executedAt).map(({ name, executedAt }) => ({ name, appliedAt: executedAt! }));
      const unknown = state.state === 'newer' ? state.unknown : [];
      return {
        version: [...applied.map(({ name }) => name), ...unknown].sort().at(-1) ?? null,
        applied,
        pending: migrations.filter((migration) => !migration.executedAt).map(({ name }) => name),
        unknown,
        ...counts,
        oldestWorking: oldest,
        listeners,
        reaper,
      };
    });
    if (context.json) return printJson(context, status);

    const { tasks, oldestWorking: oldestTask } = status;
    const version = [
      status.version ?? 'none',
      `(${status.applied.length} applied, ${status.pending.length === 0 ? 'none' : status.pending.join(', ')} pending` +
        (status.unknown.length > 0 ? `; ${status.unknown.join(', ')} from a newer version of the package` : '') +
        ')',
    ].join(' ');
    context.io.out(
      formatFields([
        ['schema version', version],
        ['tasks', TASK_STATUSES.map((name) => `${name} ${tasks[name]}`).join(', ')],
        ['expired', `${status.expired} awaiting the reaper`],
        ['tombstones', String(status.tombstones)],
        [
          'oldest working',
          oldestTask
            ? `${oldestTask.taskId} (${oldestTask.toolName}, owner ${formatOwner(oldestTask.owner)}), running for ${formatDuration(oldestTask.ageMs)}`
            : 'none',
        ],
        ['listeners', `${status.listeners} connected (any schema of this database)`],
        ['reaper', status.reaper === null || status.reaper.length === 0 ? 'no reaper activity recorded' : status.reaper.map(describePhase).join('; ')],
      ]).join('\n'),
    );
  },
};

function describePhase(phase: ReaperActivity): string {
  const finished = phase.lastFinishedAt ? `last finished ${formatTime(phase.lastFinishedAt)}` : `started ${formatTime(phase.lastStartedAt)}, not finished`;
  return `${phase.phase} ${finished} (${phase.lastRows ?? 0} rows; ${phase.totalRows ?? 0} in all)`;
}
