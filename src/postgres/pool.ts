import pg from 'pg';

/**
 * A pool this package creates and ends itself. An idle connection that dies (a server restart, a
 * dropped database, or simply the server going away while `end()` is still closing sockets, which
 * pg-pool does not wait for) emits 'error' on its pool, and with no listener that would crash the
 * process. The next query reports the failure anyway, as a `backend` error.
 */
export function createPool(connectionString: string | undefined, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', () => {});
  return pool;
}
