import { TaskStoreError } from '../contract/errors.js';

const URL_CREDENTIALS = /(postgres(?:ql)?:\/\/)[^@\s/]*@/gi;
const PASSWORD_SETTING = /(password\s*=\s*)\S+/gi;

/**
 * Wraps a driver or database failure as `backend`. The message is scrubbed of anything that looks
 * like credentials; the original error stays available as `cause` for logs the operator controls.
 */
export function toBackendError(error: unknown, connectionString?: string): TaskStoreError {
  if (error instanceof TaskStoreError) return error;
  let message = error instanceof Error ? error.message : String(error);
  if (connectionString) message = message.replaceAll(connectionString, '<connection string>');
  message = message.replace(URL_CREDENTIALS, '$1***@').replace(PASSWORD_SETTING, '$1***');
  const code = (error as { code?: unknown } | null)?.code;
  const suffix = typeof code === 'string' ? ` (${code})` : '';
  return new TaskStoreError('backend', `database error: ${message}${suffix}`, { cause: error });
}

/**
 * Whether a statement failed because its session ended under it (the server shutting down, an
 * administrator's pg_terminate_backend, a dropped socket), not because of the statement or
 * because no connection could be made: a call that was already under way when the server went
 * away. Refused connections are not this: a server that is down fails calls fast.
 */
export function isSessionLost(error: unknown): boolean {
  const cause = error instanceof TaskStoreError ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  // 57P01/57P02: administrator or crash shutdown; 08003/08006: connection gone or failed in use.
  if (typeof code === 'string' && ['57P01', '57P02', '08003', '08006', 'ECONNRESET', 'EPIPE'].includes(code)) return true;
  const message = cause instanceof Error ? cause.message : '';
  return /Connection terminated unexpectedly/i.test(message);
}

/** Whether no connection could be had: the server is down, starting or shutting down. */
export function isServerUnavailable(error: unknown): boolean {
  const cause = error instanceof TaskStoreError ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (code.startsWith('08') || ['57P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT'].includes(code))) return true;
  const message = cause instanceof Error ? cause.message : '';
  return isSessionLost(error) || /timeout exceeded when trying to connect|the database system is (shutting down|starting up)/i.test(message);
}
