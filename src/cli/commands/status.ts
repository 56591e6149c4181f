/** `mcp-task-store status`: the schema's version and what the store holds, at a glance. */
import { Migrator } from 'kysely';
import { migratorOptions } from '../../postgres/migrate.js';
import { announce, printJson, type Command } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { formatDuration, formatFields, formatOwner, formatTime } from '../format.js';
import { leaseSummary, type LeaseSummary } from '../lease-queries.js';
import { listenerConnections, oldestWorking, reaperActivity, storeCounts, TASK_STATUSES, type ReaperActivity } from '../operator-queries.js';

export const statusCommand: Command = {
  name: 'status',
  summary: 'schema version, pending migrations, tasks by status, reaper backlog, listeners',
  description: `Shows the schema's version (its latest applied migration) and the migrations still pending;
live tasks by status; expired rows awaiting the reaper; tombstones; the oldest working task
and how long it has run; the listener connections to the database (store instances and SDK
message queues, of every schema: PostgreSQL does not say what a connection listens to);
what the reapers last did, where the schema records it; and the execution leases: the
runners (store instances) running tasks now, and the tasks rescued in the last day.

Counting reads the whole tasks table: cheap for thousands of rows, seconds for millions.`,
  options: {},
  async run(context) {
    announce(context);
    const status = await withDatabase(context, 4, async (database) => {
      const state = await requireMigrated(database, { allowBehind: true });
      const [migrations, counts, oldest, listeners, reaper, leases] = await Promise.all([
        new Migrator({ db: database.db, ...migratorOptions(context.schema) }).getMigrations(),
        storeCounts(database),
        oldestWorking(database),
        listenerConnections(database),
        reaperActivity(database),
        leaseSummary(database),
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
        leases,
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
        ['runners', describeRunners(status.leases)],
        ['rescued', status.leases === null ? 'no leases in this schema (before 0007)' : `${status.leases.rescuedLastDay.resumed} resumed, ${status.leases.rescuedLastDay.failed} failed in the last day`],
        ['reaper', status.reaper === null || status.reaper.length === 0 ? 'no reaper activity recorded' : status.reaper.map(describePhase).join('; ')],
      ]).join('\n'),
    );
  },
};

function describePhase(phase: ReaperActivity): string {
  const finished = phase.lastFinishedAt ? `last finished ${formatTime(phase.lastFinishedAt)}` : `started ${formatTime(phase.lastStartedAt)}, not finished`;
  return `${phase.phase} ${finished} (${phase.lastRows ?? 0} rows; ${phase.totalRows ?? 0} in all)`;
}

function describeRunners(leases: LeaseSummary | null): string {
  if (leases === null) return 'no leases in this schema (before 0007)';
  const runners = leases.runners.map(
    ({ runnerId, leases: held, overdue }) => `${runnerId} (${held} task${held === 1 ? '' : 's'}${overdue > 0 ? `, ${overdue} overdue` : ''})`,
  );
  if (leases.awaitingResume > 0) runners.push(`${leases.awaitingResume} rescued awaiting a resume`);
  return runners.length === 0 ? 'none running tasks' : runners.join('; ');
}
