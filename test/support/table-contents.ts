/** Reading and resetting a store's tables directly, for "nothing changed" and "nothing lost" checks. */
import type pg from 'pg';

/** Every table migrations/ creates in a store's schema. */
export const STORE_TABLES = ['tasks', 'input_requests', 'tombstones', 'task_history'] as const;

/**
 * Every row of every table of `schema`, as text, in a fixed order: two dumps are equal exactly
 * when the tables hold the same data (timestamps included, so a write that only bumps
 * `last_updated_at` shows).
 */
export async function tableContents(pool: pg.Pool, schema: string): Promise<Record<string, string[]>> {
  const contents: Record<string, string[]> = {};
  for (const table of STORE_TABLES) {
    const { rows } = await pool.query<{ row: string }>(
      `SELECT t::text AS row FROM ${schema}.${table} AS t ORDER BY t::text COLLATE "C"`,
    );
    contents[table] = rows.map((row) => row.row);
  }
  return contents;
}

/**
 * Empties every table of `schema` in one round trip. DELETE rather than TRUNCATE: the tables are
 * small, and TRUNCATE's new files cost tens of milliseconds on every call.
 */
export async function emptyTables(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(STORE_TABLES.map((table) => `DELETE FROM ${schema}.${table};`).join(' '));
}
