/** The one PostgreSQL server a test run shares; every test file makes its own database on it. */
export interface TestServer {
  /** A superuser's connection string, used to create and drop the test databases. */
  readonly adminUrl: string;
  /** Where the server came from, for the line the run prints. */
  readonly description: string;
  stop(): Promise<void>;
}

/**
 * Settings for servers the harness starts itself. Durability is pointless when the data dies with
 * the run, and test files run in parallel, each store holding a pool and a LISTEN connection.
 */
export const throwawayServerSettings: Record<string, string> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '300',
};

/** `throwawayServerSettings` as command-line flags for the `postgres` binary. */
export function throwawayServerFlags(): string[] {
  return Object.entries(throwawayServerSettings).flatMap(([name, value]) => [
    '-c',
    `${name}=${value}`,
  ]);
}
