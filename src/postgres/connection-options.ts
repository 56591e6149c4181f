/**
 * The connection options every PostgreSQL-backed class of the package takes (the store, the SDK
 * integration's message queue and session index, `migrate`), validated by one schema so that an
 * untyped caller's `listen: { connectionString: 5 }` is an `invalid_input` naming the field
 * wherever it is passed, never a crash later in the listener.
 */
import type pg from 'pg';
import { z } from 'zod';
import { readingThrew } from '../contract/errors.js';
import { readFields, stringFirst } from '../contract/validation.js';
import { schemaNameSchema } from './schema-name.js';

const POOL_METHODS = ['connect', 'query', 'end', 'on'];

/**
 * Anything with a pool's methods: a caller's `pg` may be another copy than ours. A pool whose
 * reading throws (a Proxy, a getter) is refused here, naming `pool`, with the caller's error as cause.
 */
export const poolSchema = z.custom<pg.Pool>().superRefine((value, ctx) => {
  try {
    const candidate = value as unknown as Record<string, unknown> | null;
    const isPool = typeof candidate === 'object' && candidate !== null && POOL_METHODS.every((method) => typeof candidate[method] === 'function');
    if (!isPool) ctx.addIssue({ code: 'custom', message: 'must be a pg.Pool' });
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: readingThrew(error), params: { cause: error } });
  }
});

/** Where to connect: a caller's pool or a URL, and the schema. */
export const connectionFields = {
  pool: poolSchema.optional(),
  connectionString: stringFirst(z.string().min(1)).optional(),
  schema: schemaNameSchema.optional(),
};

/** LISTEN/NOTIFY: `false` polls instead; `connectionString` is a direct connection for the listener alone. */
export const listenSchema = readFields(
  z.union([z.literal(false), z.strictObject({ connectionString: stringFirst(z.string().min(1)).optional() })], {
    error: 'must be false or { connectionString?: a non-empty string }',
  }),
);

/** Either a pool or a connection string must be given. */
export function requiringConnection<T extends z.ZodType<{ pool?: unknown; connectionString?: unknown }>>(schema: T) {
  return schema.refine((options) => options.pool !== undefined || options.connectionString !== undefined, {
    message: 'give a pool or a connectionString',
  });
}

/**
 * The connection fields alone, other keys left to the class that owns the connection: what the
 * SDK's PostgresConnection checks again, so it is safe whoever builds it.
 */
export const connectionOptionsSchema = requiringConnection(z.looseObject(connectionFields));
