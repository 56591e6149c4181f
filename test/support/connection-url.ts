/** The same connection string, pointing at another database; host, user and parameters stay. */
export function withDatabaseName(connectionString: string, database: string): string {
  const url = parseConnectionUrl(connectionString);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

/** The connection string with its password removed, safe to print. */
export function withoutPassword(connectionString: string): string {
  const url = parseConnectionUrl(connectionString);
  url.password = '';
  return url.toString();
}

function parseConnectionUrl(connectionString: string): URL {
  try {
    return new URL(connectionString);
  } catch {
    // The string may hold a password, so it stays out of the message.
    throw new Error(
      'TEST_DATABASE_URL must be a URL such as postgres://user:password@host:5432/database',
    );
  }
}
