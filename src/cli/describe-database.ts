/** The connection string without its password, safe to print; only the fact that one was given, if it is not a URL. */
export function describeDatabase(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    url.password = '';
    return url.toString();
  } catch {
    return '(from the connection string given)';
  }
}
