/** `mcp-task-store dashboard`: a live web page of the tasks, until Ctrl-C. */
import { PostgresTaskStore } from '../../postgres/postgres-task-store.js';
import { announce, CliError, type Command } from '../command.js';
import { requireMigrated, withDatabase } from '../database.js';
import { generateToken, TOKEN_ENV, validateToken } from '../dashboard/access.js';
import { DashboardApi } from '../dashboard/api.js';
import { LiveFeed } from '../dashboard/live-feed.js';
import { startDashboardServer } from '../dashboard/server.js';

const DEFAULT_HOST = '127.0.0.1';
/** How often the rows updated since the last look are read again, for what NOTIFY does not announce. */
const REREAD_MS = 1000;

export const dashboardCommand: Command = {
  name: 'dashboard',
  summary: 'serve a live web page of the tasks, their timelines and input requests, until Ctrl-C',
  description: `Serves a web page (http://127.0.0.1:<port>/, read-only unless --allow-actions) with the live
tasks by status, a filterable list of them one page at a time, and each task's fields, outcome,
input requests and timeline. It updates itself within a second as tasks change, from one LISTEN
connection however many browsers watch.

Every request needs the access token: --token, or $${TOKEN_ENV}, or one generated now and
printed in the URL to open. With --allow-actions a task can be cancelled from its page (after a
confirmation); nothing else ever writes. It binds to 127.0.0.1 unless --host says otherwise:
anyone who can reach the port and holds the token sees every task.`,
  options: {
    port: { type: 'string', value: '<port>', help: 'the port to listen on (default 0: any free port)' },
    host: { type: 'string', value: '<host>', help: `the address to bind (default ${DEFAULT_HOST})` },
    token: { type: 'string', value: '<token>', help: `the access token (default: $${TOKEN_ENV}, else a new random one)` },
    'allow-actions': { type: 'boolean', help: 'allow cancelling a task from the page' },
  },
  async run(context) {
    const { options } = context;
    const port = typeof options.port === 'string' ? Number(options.port) : 0;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new CliError('usage', `--port ${options.port}: expected 0 to 65535`);
    const host = typeof options.host === 'string' ? options.host : DEFAULT_HOST;
    const given = typeof options.token === 'string' ? ['--token', options.token] : process.env[TOKEN_ENV] ? [TOKEN_ENV, process.env[TOKEN_ENV]!] : null;
    const token = given ? validateToken(given[1]!, given[0]!) : generateToken();
    announce(context);
    await withDatabase(context, 4, async (database) => {
      await requireMigrated(database, { allowBehind: false });
      // Only a cancel goes through the store, so its token is raised wherever the task runs.
      const store = new PostgresTaskStore({ pool: database.pool, schema: context.schema, reaper: false, listen: false });
      const api = new DashboardApi(database, store);
      const feed = new LiveFeed(database, {
        connectionString: context.connectionString,
        schema: context.schema,
        intervalMs: REREAD_MS,
        readSummary: () => api.summary(),
      });
      const dashboard = await startDashboardServer({
        database,
        store,
        feed,
        token,
        host,
        port,
        allowActions: options['allow-actions'] === true,
        databaseLabel: databaseName(context.connectionString),
      });
      context.io.out(`dashboard: ${dashboard.url}${options['allow-actions'] === true ? ' (actions allowed: cancel)' : ' (read-only)'}`);
      await new Promise<void>((resolve) => {
        const unsubscribe = context.io.onStop(() => {
          unsubscribe();
          resolve();
        });
      });
      await dashboard.close();
      await store.close();
    });
  },
};

/** The database's name alone: the page shows no URL, host or user. */
function databaseName(connectionString: string): string {
  try {
    return decodeURIComponent(new URL(connectionString).pathname.replace(/^\//, '')) || 'the default database';
  } catch {
    return 'the database';
  }
}
