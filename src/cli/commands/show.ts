/** `mcp-task-store show <taskId>`: one task, its input requests and its history as a timeline. */
import { isTerminal } from '../../contract/types.js';
import { announce, CliError, printJson, type Command } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { formatDuration, formatFields, formatOwner, formatTable, truncate } from '../format.js';
import { describeLease, readLeases, readRescues, type RescueLine, type TaskLeaseLine } from '../lease-queries.js';
import {
  readHistory,
  readInputRequests,
  readTask,
  readTombstone,
  type InputRequestLine,
  type TaskDetail,
  type Tombstone,
  type Transition,
} from '../operator-queries.js';

export const showCommand: Command = {
  name: 'show',
  summary: 'one task: its state, input requests and history',
  synopsis: '<taskId>',
  description: `Shows a task: status, tool, owner, times, ttl and expiry, status message (and the error of a
failed task); the input requests it issued, with their answers; and its history, each
transition with the time spent in the status before it; the runner holding a running task's
lease, and every rescue of the task after a runner died. An expired task shows what its
tombstone keeps (owner and expiry) and its history, until the reaper purges them.`,
  options: {},
  positionals: ['taskId'],
  async run(context) {
    const taskId = context.args[0]!;
    announce(context);
    const found = await withDatabase(context, 1, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      const task = await readTask(database, taskId);
      const tombstone = task ? null : await readTombstone(database, taskId);
      if (!task && !tombstone) throw new CliError('failure', `no task ${taskId} in schema ${context.schema}`);
      return {
        task,
        tombstone,
        lease: (await readLeases(database, [taskId])).get(taskId) ?? null,
        rescues: await readRescues(database, taskId),
        inputRequests: await readInputRequests(database, taskId),
        history: await readHistory(database, taskId),
      };
    });
    if (context.json) {
      const { readAt: _readAt, ...task } = found.task ?? { readAt: null };
      return printJson(context, { ...found, task: found.task ? task : null });
    }
    const lines = found.task ? describeTask(found.task, found.lease) : describeTombstone(taskId, found.tombstone!);
    if (found.rescues.length > 0) lines.push('', 'rescues', ...indent(describeRescues(found.rescues)));
    if (found.inputRequests.length > 0) lines.push('', 'input requests', ...indent(describeInputRequests(found.inputRequests)));
    if (found.history.length > 0) lines.push('', 'history', ...indent(describeHistory(found.history, found.task)));
    context.io.out(lines.join('\n'));
  },
};

function describeTask(task: TaskDetail, lease: TaskLeaseLine | null): string[] {
  const fields: [string, string][] = [
    ['task', task.taskId],
    ['status', task.expired ? `${task.status}, expired: awaiting the reaper` : task.status],
    ['tool', task.toolName],
    ['owner', formatOwner(task.owner)],
    ['created', task.createdAt.toISOString()],
    ['updated', task.lastUpdatedAt.toISOString()],
    ['ttl', task.ttlMs === null ? 'none (never expires)' : `${formatDuration(task.ttlMs)}, expires ${task.expiresAt!.toISOString()}`],
  ];
  if (task.pollIntervalMs !== null) fields.push(['poll interval', formatDuration(task.pollIntervalMs)]);
  if (task.cancelRequestedAt) fields.push(['cancel', `requested ${task.cancelRequestedAt.toISOString()}`]);
  if (lease) fields.push(['runner', describeLease(lease)]);
  fields.push(['message', task.statusMessage ?? '-']);
  if (task.error) fields.push(['error', truncate(JSON.stringify(task.error), 200)]);
  return formatFields(fields);
}

function describeTombstone(taskId: string, tombstone: Tombstone): string[] {
  return formatFields([
    ['task', taskId],
    ['status', `expired ${tombstone.expiredAt.toISOString()}; a tombstone since ${tombstone.tombstonedAt.toISOString()}, its content is gone`],
    ['owner', formatOwner(tombstone.owner)],
  ]);
}

function describeInputRequests(requests: InputRequestLine[]): string[] {
  const rows = requests.map((request) => [
    request.key,
    request.state,
    request.issuedAt.toISOString(),
    request.settledAt?.toISOString() ?? '-',
    truncate(JSON.stringify(request.request), 60),
    request.response ? truncate(JSON.stringify(request.response), 60) : '-',
  ]);
  return formatTable(['KEY', 'STATE', 'ISSUED', 'SETTLED', 'REQUEST', 'RESPONSE'], rows);
}

/** One line per transition, then how long the task has been in its current status (or took in all). */
function describeHistory(history: Transition[], task: TaskDetail | null): string[] {
  const rows = history.map((transition) => [
    transition.at.toISOString(),
    transition.toStatus,
    transition.fromStatus === null || transition.previousStateMs === null
      ? 'created'
      : `after ${formatDuration(transition.previousStateMs)} ${transition.fromStatus}`,
    truncate(transition.message, 60),
  ]);
  const lines = formatTable(['AT', 'STATUS', 'TRANSITION', 'MESSAGE'], rows);
  const first = history[0]!;
  const last = history.at(-1)!;
  if (isTerminal(last.toStatus)) lines.push(`${last.toStatus} after ${formatDuration(last.at.getTime() - first.at.getTime())} in all`);
  else if (task) lines.push(`${last.toStatus} for ${formatDuration(task.readAt.getTime() - last.at.getTime())} so far`);
  return lines;
}

function describeRescues(rescues: RescueLine[]): string[] {
  const rows = rescues.map((rescue) => [rescue.at.toISOString(), rescue.outcome, rescue.lostRunner ?? '-', rescue.rescuedBy]);
  return formatTable(['AT', 'OUTCOME', 'LOST RUNNER', 'RESCUED BY'], rows);
}

function indent(lines: string[]): string[] {
  return lines.map((line) => `  ${line}`);
}
