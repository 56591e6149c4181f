// Proves the database harness in test/support before any store test relies on it.
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { createTestDatabase, useTestDatabase } from './support/test-database.js';

describe('useTestDatabase', () => {
  const database = useTestDatabase();

  test('connects to a fresh, empty database named in its connection string', async () => {
    const [row] = await queryOnce(database.connectionString, `
      select version(), current_database() as name,
             (select count(*)::int from pg_tables where schemaname = 'public') as "tableCount"`);

    expect(row).toEqual({
      version: expect.stringMatching(/^PostgreSQL \d+/),
      name: expect.stringMatching(/^test_[0-9a-f]{16}$/),
      tableCount: 0,
    });
    expect(new URL(database.connectionString).pathname).toBe(`/${row?.name}`);
  });
});

describe('createTestDatabase', () => {
  test('gives each caller a database of its own', async () => {
    const [first, second] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    try {
      expect(first.connectionString).not.toBe(second.connectionString);
      await queryOnce(first.connectionString, 'create table only_in_first (id int)');

      const findTable = `select to_regclass('only_in_first') is not null as found`;
      expect(await queryOnce(first.connectionString, findTable)).toEqual([{ found: true }]);
      expect(await queryOnce(second.connectionString, findTable)).toEqual([{ found: false }]);
    } finally {
      await Promise.all([first.drop(), second.drop()]);
    }
  });

  test('drop() removes the database even while a connection to it is open', async () => {
    const database = await createTestDatabase();
    const leftOpen = new pg.Client({ connectionString: database.connectionString });
    await leftOpen.connect();
    // The client reports the forced end twice: the server's notice, then the closed socket.
    const ended = new Promise((resolve) => leftOpen.on('error', resolve));

    await database.drop();

    expect(String(await ended)).toMatch(/terminat/);
    const reconnecting = queryOnce(database.connectionString, 'select 1');
    await expect(reconnecting).rejects.toThrow(/does not exist/);
  });
});

async function queryOnce(connectionString: string, sql: string): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}
