/**
 * Login roles of their own for a store's connections, so that a test can refuse a store's logins,
 * reads or writes while everything else goes on. Every role is dropped after the test file.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, expect } from 'vitest';
import { LISTENER_APPLICATION_NAME } from '../../src/postgres/listener.js';
import type { StoreFactory } from './postgres-stores.js';

export interface StoreRole {
  /** The test database's URL, logging in as this role. */
  connectionString: string;
  logins(allowed: boolean): Promise<unknown>;
  /** SELECT on the schema's tasks table. */
  reads(allowed: boolean): Promise<unknown>;
  /** UPDATE on the schema's tasks table. */
  updates(allowed: boolean): Promise<unknown>;
  /** Ends the role's listener connection, expecting exactly one. */
  terminateListener(): Promise<void>;
}

export function useStoreRoles(stores: StoreFactory): (schema: string) => Promise<StoreRole> {
  const roles: string[] = [];
  afterAll(async () => {
    const admin = stores.pool();
    for (const name of roles) {
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]);
      await admin.query(`DROP OWNED BY ${name}`);
      await admin.query(`DROP ROLE ${name}`);
    }
    await admin.end();
  });

  return async (schema) => {
    const admin = stores.pool();
    const name = `store_role_${process.pid}_${roles.length + 1}`;
    const password = randomBytes(12).toString('hex');
    await admin.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
    roles.push(name);
    await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${name}`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${name}`);
    const url = new URL(stores.connectionString);
    url.username = name;
    url.password = password;
    const grant = (privilege: string, allowed: boolean) =>
      admin.query(allowed ? `GRANT ${privilege} ON ${schema}.tasks TO ${name}` : `REVOKE ${privilege} ON ${schema}.tasks FROM ${name}`);
    return {
      connectionString: url.toString(),
      logins: (allowed) => admin.query(`ALTER ROLE ${name} ${allowed ? 'LOGIN' : 'NOLOGIN'}`),
      reads: (allowed) => grant('SELECT', allowed),
      updates: (allowed) => grant('UPDATE', allowed),
      async terminateListener() {
        const { rows } = await admin.query(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE usename = $1 AND application_name = $2`,
          [name, LISTENER_APPLICATION_NAME],
        );
        expect(rows[0].n).toBe(1);
      },
    };
  };
}
