/**
 * `npm start`: the MCP server over Streamable HTTP at http://127.0.0.1:$PORT/mcp (PORT default
 * 3000), its tasks in PostgreSQL: DATABASE_URL when set, else embedded PostgreSQL with its data in
 * .data/ (tasks survive a restart). It migrates on start, runs a short demo against itself (set
 * MCP_DEMO_RUN=0 to skip it), prints how to connect and a psql command showing the task history,
 * and shuts down cleanly on Ctrl-C (SIGINT) or SIGTERM.
 *
 * Several processes with different PORTs on one DATABASE_URL serve the same tasks; when one dies
 * mid-task, another resumes its `slow_compute` tasks. MCP_HEARTBEAT_MS and MCP_LEASE_MS set the
 * execution leases (default 10000 and 30000: a dead server's task is rescued within about 40 s).
 * MCP_DASHBOARD=1 also serves `mcp-task-store dashboard` on the same tasks and prints its URL.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../src/cli/cli.js';
import { migrate, type LeaseOptions } from '../../src/index.js';
import { openScriptDatabase } from '../database.js';
import { scriptPool } from '../support.js';
import { runDemo, type DemoRun } from './demo-run.js';
import { startMcpServer } from './server.js';
import { demoTools } from './tools.js';

const SCHEMA = 'mcp_tasks';
const DATA_DIRECTORY = join(fileURLToPath(new URL('../..', import.meta.url)), '.data');
const DAY_MS = 24 * 60 * 60 * 1000;

/** Task history, oldest first: what each tool call went through. */
const HISTORY_QUERY =
  `SELECT t.tool_name, h.at, h.from_status, h.to_status, h.message FROM ${SCHEMA}.task_history AS h ` +
  `JOIN ${SCHEMA}.tasks AS t USING (task_id) ORDER BY t.created_at, h.id`;

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, not ${process.env.PORT}`);

  const database = await openScriptDatabase(DATA_DIRECTORY);
  console.log(`database: ${database.description}`);
  const pool = scriptPool(database.connectionString, 20);
  const stopDatabase = async () => {
    await pool.end();
    await database.stop();
  };
  let server: Awaited<ReturnType<typeof startMcpServer>>;
  try {
    const { applied } = await migrate({ pool, schema: SCHEMA });
    console.log(`migrations applied now: ${applied.length ? applied.join(', ') : 'none (already up to date)'}`);
    // Tasks are kept for a day unless a client asks otherwise, so there is history to look at.
    server = await startMcpServer({ pool, schema: SCHEMA, port, store: { defaultTtlMs: DAY_MS, leases: leaseOptions() } });
  } catch (error) {
    await stopDatabase();
    throw error;
  }

  let demo: DemoRun | undefined;
  const dashboard = process.env.MCP_DASHBOARD === '1' ? startDashboard(database.connectionString) : null;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping`);
    await demo?.close().catch(() => {});
    await dashboard?.stop();
    await server.close();
    await stopDatabase();
    console.log('stopped');
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void stop(signal).then(() => process.exit(0), (error) => (console.error(error), process.exit(1))));
  }

  console.log(`\nMCP server (Streamable HTTP; protocol 2026-07-28 with the tasks extension, and 2025-11-25 with tasks) at ${server.url}`);
  if (dashboard) console.log(`dashboard (read-only) at ${await dashboard.url}`);
  console.log(`tools: ${demoTools.map((tool) => `${tool.name}${tool.taskSupport === 'forbidden' ? '' : ` (tasks ${tool.taskSupport})`}`).join(', ')}`);
  console.log('connect any MCP client with Streamable HTTP to that URL; several servers on one DATABASE_URL share the tasks');

  if (process.env.MCP_DEMO_RUN !== '0') {
    demo = await runDemo(server.url);
    console.log('\ndemo run, as an MCP client of this server:');
    console.log(`  slow_compute   completed        task ${demo.completed}`);
    console.log(`  failing_job    failed           task ${demo.failed}`);
    console.log(`  confirm_delete input_required   task ${demo.waiting} (its question stays open)`);
  }

  const url = process.env.DATABASE_URL ? '"$DATABASE_URL"' : `'${database.connectionString}'`;
  console.log('\ntask history in SQL (the README has more queries):');
  console.log(`  psql ${url} -c '${HISTORY_QUERY}'`);
  console.log(`\nrunner: ${server.store.leases.runnerId} (its tasks are resumed or failed by another server if it dies)`);
  console.log(`\nready: ${server.url} (Ctrl-C to stop)`);
}

/** `mcp-task-store dashboard` in this process, on the same schema, for MCP_DASHBOARD=1. */
function startDashboard(connectionString: string): { url: Promise<string>; stop(): Promise<void> } {
  let stop: () => void = () => {};
  let printed: (url: string) => void = () => {};
  const url = new Promise<string>((resolve) => (printed = resolve));
  const done = runCli(['dashboard', '--schema', SCHEMA], { ...process.env, DATABASE_URL: connectionString }, {
    out: (text) => {
      const match = /^dashboard: (\S+)/.exec(text);
      if (match) printed(match[1]!);
    },
    err: (text) => console.error(`dashboard: ${text}`),
    interactive: false,
    onStop: (callback) => ((stop = callback), () => {}),
  });
  return { url, stop: async () => (stop(), void (await done)) };
}

/** MCP_HEARTBEAT_MS and MCP_LEASE_MS, when set; the rescuer then runs once per heartbeat. */
function leaseOptions(): LeaseOptions {
  const setting = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
  const heartbeatMs = setting('MCP_HEARTBEAT_MS');
  const leaseMs = setting('MCP_LEASE_MS');
  return { ...(heartbeatMs !== undefined && { heartbeatMs, rescueIntervalMs: heartbeatMs }), ...(leaseMs !== undefined && { leaseMs }) };
}

await main();
