/** Where a figure came from: the machine, the runtime, the database server and the code. */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import pg from 'pg';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  /** `embedded PostgreSQL` or `DATABASE_URL` (never the URL itself: it may hold a password). */
  database: string;
  /** 1, 5 and 15 minute load averages when the run started: a busy machine gives noisy figures. */
  loadAverage: number[];
  commit: string;
}

function gitCommit(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim();
    return dirty ? `${commit} (with uncommitted changes)` : commit;
  } catch {
    return 'unknown';
  }
}

export async function describeMachine(connectionString: string, database: string): Promise<Machine> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: string }>(`SELECT current_setting('server_version') AS version`);
    return {
      cpu: cpus()[0]?.model.trim() ?? 'unknown',
      cores: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      os: `${type()} ${release()}`,
      node: process.version,
      postgres: rows[0]!.version,
      database: database.startsWith('embedded') ? 'embedded PostgreSQL' : database,
      loadAverage: loadavg().map((load) => Number(load.toFixed(2))),
      commit: gitCommit(),
    };
  } finally {
    await client.end();
  }
}

export function formatMachine(machine: Machine): string {
  return (
    `${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB, ${machine.os}; Node ${machine.node}; ` +
    `PostgreSQL ${machine.postgres} (${machine.database}); load average at start ${machine.loadAverage.join(' / ')}; ` +
    `commit ${machine.commit}`
  );
}
