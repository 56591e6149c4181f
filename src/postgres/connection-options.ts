/**
 * The connection options every PostgreSQL-backed class of the package takes (the store, and the
 * SDK integration's message queue and session index), validated by one schema so that an
 * untyped caller's `listen: { connectionString: 5 }` is an `invalid_input` naming the field
 * wherever it is passed, never a crash later in the listener.
 */
import type pg from 'pg';
import { z } from 'zod';
import { schemaNameSchema } from './schema-name.js';

/** Anything with a pool's methods: a caller's `pg` may be another copy than ours. */
export const poolSchema = z.custom<pg.Pool>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    ['connect', 'query', 'end', 'on'].every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
  'must be a pg.Pool',
);

/** Where to connect: a caller's pool or a URL, and the schema. */
export const connectionFields = {
  pool: poolSchema.optional(),
  connectionString: z.string().min(1).optional(),
  schema: schemaNameSchema.optional(),
};

/** LISTEN/NOTIFY: `false` polls instead; `connectionString` is a direct connection for the listener alone. */
export const listenSchema = z.union([z.literal(false), z.strictObject({ connectionString: z.string().min(1).optional() })]);

/** Either a pool or a connection string must be given. */
export function requiringConnection<T extends z.ZodType<{ pool?: unknown; connectionString?: unknown }>>(schema: T) {
  return schema.refine((options) => options.pool !== undefined || options.connectionString !== undefined, {
    message: 'give a pool or a connectionString',
  });
}
