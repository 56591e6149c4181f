/**
 * The option groups both stores accept, as zod schemas: each group is validated once, here, the
 * same way in every store. Unknown keys are refused (a misspelled option must not be silently
 * ignored), and so is `null` where a group is expected: leave the option out to get the default.
 */
import { z } from 'zod';
import { leaseOptionsSchema } from './leases.js';
import { parse, readFields, ttlSchema } from './validation.js';

const positiveInteger = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** `limits`: every limit a positive integer when given. Which ones a store enforces is its own. */
const retentionLimitsSchema = z.strictObject({
  maxTasks: positiveInteger.optional(),
  maxPayloadBytes: positiveInteger.optional(),
  maxRetainedBytes: positiveInteger.optional(),
  maxTasksPerOwner: positiveInteger.optional(),
});

/** The options every store takes; each group's fields are read once, like the options themselves. */
export const commonStoreOptions = {
  defaultTtlMs: ttlSchema.optional(),
  limits: readFields(retentionLimitsSchema).optional(),
  leases: readFields(leaseOptionsSchema).optional(),
};

export const memoryStoreOptionsSchema = z
  .strictObject({
    ...commonStoreOptions,
    tombstoneRetentionMs: ttlSchema.optional(),
  })
  .optional();

/** Parses a store's options, or throws `invalid_input` naming the option: `options.limits.maxTasks: …`. */
export function parseOptions<S extends z.ZodType>(schema: S, options: unknown): z.output<S> {
  return parse(schema, options, 'options');
}
