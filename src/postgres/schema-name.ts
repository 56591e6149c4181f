import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parse } from '../contract/validation.js';

export const DEFAULT_SCHEMA = 'mcp_tasks';

/** PostgreSQL truncates identifiers (and NOTIFY channel names) longer than this many bytes. */
const MAX_IDENTIFIER_BYTES = 63;
const IDENTIFIER = /^[a-z_][a-z0-9_$]*$/;

/**
 * A plain lowercase identifier that PostgreSQL keeps as written, so a schema name is never a way
 * to inject SQL and never silently truncated; and not one of PostgreSQL's own schemas (`pg_*`,
 * `information_schema`), which a store must never write to.
 */
export const schemaNameSchema = z
  .string()
  .refine(
    (schema) => IDENTIFIER.test(schema) && Buffer.byteLength(schema) <= MAX_IDENTIFIER_BYTES,
    `must be a lowercase SQL identifier of at most ${MAX_IDENTIFIER_BYTES} bytes (letters, digits, _ and $, not starting with a digit)`,
  )
  .refine(
    (schema) => !schema.startsWith('pg_') && schema !== 'information_schema',
    'names starting with pg_, and information_schema, are PostgreSQL’s own schemas',
  );

/** The schema name, or `invalid_input`; the default when none is given. */
export function validateSchemaName(schema: unknown = DEFAULT_SCHEMA): string {
  return parse(schemaNameSchema, schema, 'schema');
}

/**
 * The NOTIFY channel of a schema: readable (`<schema>_events`) when that fits in 63 bytes, else the
 * schema's prefix plus a hash, so two long schema names never share a channel.
 */
export function notificationChannel(schema: string): string {
  const readable = `${schema}_events`;
  if (Buffer.byteLength(readable) <= MAX_IDENTIFIER_BYTES) return readable;
  const hash = createHash('sha256').update(schema).digest('hex').slice(0, 16);
  return `${schema.slice(0, MAX_IDENTIFIER_BYTES - hash.length - 8)}_${hash}_events`;
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
