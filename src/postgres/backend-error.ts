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
