/**
 * The dashboard's per-tool figures: live tasks of each tool by status, and the tasks each tool
 * settled in the last hour and day, by outcome, from the history (so tasks already gone count).
 */
import { sql } from 'kysely';
import type { TaskStatus } from '../../contract/types.js';
import type { CliDatabase } from '../database.js';
import type { ToolActivityJson } from './client/wire.js';

/** The busiest tools first; the rest are left out of the header. */
const MAX_TOOLS = 12;

export async function toolActivity(database: CliDatabase): Promise<ToolActivityJson[]> {
  const { rows } = await sql<{ tool_name: string; status: TaskStatus | null; live: number; hour: number; day: number }>`
    WITH live AS (
           SELECT tool_name, status, count(*)::int AS n FROM ${database.tables.tasks}
            WHERE expires_at IS NULL OR expires_at > now() GROUP BY tool_name, status),
         settled AS (
           SELECT tool_name, to_status AS status,
                  count(*) FILTER (WHERE at > now() - interval '1 hour')::int AS hour, count(*)::int AS day
             FROM ${database.tables.task_history}
            WHERE at > now() - interval '1 day' AND to_status IN ('completed', 'failed', 'cancelled') AND tool_name IS NOT NULL
            GROUP BY tool_name, to_status)
    SELECT coalesce(l.tool_name, s.tool_name) AS tool_name, coalesce(l.status, s.status) AS status,
           coalesce(l.n, 0) AS live, coalesce(s.hour, 0) AS hour, coalesce(s.day, 0) AS day
      FROM live AS l FULL JOIN settled AS s ON s.tool_name = l.tool_name AND s.status = l.status`.execute(database.db);
  const byTool = new Map<string, ToolActivityJson>();
  for (const row of rows) {
    const tool = byTool.get(row.tool_name) ?? { toolName: row.tool_name, live: {}, settledLastHour: {}, settledLastDay: {} };
    if (row.status !== null) {
      if (row.live > 0) tool.live[row.status] = row.live;
      if (row.hour > 0) tool.settledLastHour[row.status] = row.hour;
      if (row.day > 0) tool.settledLastDay[row.status] = row.day;
    }
    byTool.set(row.tool_name, tool);
  }
  const total = (tool: ToolActivityJson) => Object.values(tool.live).reduce((a, b) => a + b, 0) + Object.values(tool.settledLastDay).reduce((a, b) => a + b, 0);
  return [...byTool.values()].sort((a, b) => total(b) - total(a) || (a.toolName < b.toolName ? -1 : 1)).slice(0, MAX_TOOLS);
}
