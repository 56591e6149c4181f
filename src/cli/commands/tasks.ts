/** `mcp-task-store tasks`: live tasks, newest first, filtered and paged. */
import { parseChoice, parseCount, parseSince } from '../arguments.js';
import { announce, CliError, printJson, type Command } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { count, formatOwner, formatTable, formatTime, truncate } from '../format.js';
import { readLeases } from '../lease-queries.js';
import { listTasks, TASK_STATUSES, type ListingPosition, type TaskFilter } from '../operator-queries.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;
const CURSOR = /^(\d{1,20})-([0-9a-f]{32})$/;

export const tasksCommand: Command = {
  name: 'tasks',
  summary: 'list live tasks, newest first, with filters and pages',
  description: `Lists live tasks (not those past their expiry), newest first, as a table, with the runner
holding each running task's lease. A full page ends with the --cursor that continues it:
repeat the same filters with it.`,
  options: {
    status: { type: 'string', value: '<status>', help: `only tasks in this status: ${TASK_STATUSES.join(', ')}` },
    owner: { type: 'string', value: '<owner>', help: 'only tasks of this owner' },
    tool: { type: 'string', value: '<name>', help: 'only tasks of this tool' },
    since: { type: 'string', value: '<time>', help: 'only tasks created since an ISO time (2025-06-01T12:00Z) or a duration ago (90m, 1h, 2d)' },
    limit: { type: 'string', value: '<n>', help: `tasks per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})` },
    cursor: { type: 'string', value: '<cursor>', help: 'continue a listing where the previous page ended' },
  },
  async run(context) {
    const { options } = context;
    const filter: TaskFilter = {};
    if (typeof options.status === 'string') filter.status = parseChoice('status', options.status, TASK_STATUSES);
    if (typeof options.owner === 'string') filter.owner = options.owner;
    if (typeof options.tool === 'string') filter.toolName = options.tool;
    if (typeof options.since === 'string') filter.since = parseSince(options.since);
    const limit = typeof options.limit === 'string' ? parseCount('limit', options.limit, MAX_LIMIT) : DEFAULT_LIMIT;
    const after = typeof options.cursor === 'string' ? parseCursor(options.cursor) : null;

    announce(context);
    const { tasks, next } = await withDatabase(context, 1, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      const page = await listTasks(database, filter, after, limit);
      const leases = await readLeases(database, page.tasks.map((task) => task.taskId));
      return { ...page, tasks: page.tasks.map((task) => ({ ...task, lease: leases.get(task.taskId) ?? null })) };
    });
    const nextCursor = next ? `${next.createdUs}-${next.taskId}` : null;
    if (context.json) return printJson(context, { tasks, nextCursor });

    if (tasks.length === 0) return context.io.out(after ? 'no more tasks' : 'no tasks match');
    const rows = tasks.map((task) => [
      task.taskId,
      task.status,
      task.toolName,
      formatOwner(task.owner),
      formatTime(task.createdAt),
      formatTime(task.lastUpdatedAt),
      task.lease ? (task.lease.runnerId ?? 'awaiting resume') + (task.lease.overdue ? ' (overdue)' : '') : '-',
      truncate(task.statusMessage, 60),
    ]);
    const lines = formatTable(['TASK', 'STATUS', 'TOOL', 'OWNER', 'CREATED', 'UPDATED', 'RUNNER', 'MESSAGE'], rows);
    lines.push('', nextCursor ? `${count(tasks.length, 'task')}; next page: --cursor ${nextCursor}` : `${count(tasks.length, 'task')}; no more pages`);
    context.io.out(lines.join('\n'));
  },
};

function parseCursor(cursor: string): ListingPosition {
  const match = CURSOR.exec(cursor);
  if (!match) throw new CliError('usage', `--cursor ${cursor}: not a cursor this command printed`);
  return { createdUs: match[1]!, taskId: match[2]! };
}
