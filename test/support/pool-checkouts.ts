import type pg from 'pg';

/**
 * Counts the connections `pool` hands out from now on: every statement a store runs on it, outside
 * a transaction, takes one.
 */
export function countCheckouts(pool: pg.Pool): () => number {
  let checkouts = 0;
  const connect = pool.connect.bind(pool);
  pool.connect = (() => (checkouts++, connect())) as typeof pool.connect;
  return () => checkouts;
}
