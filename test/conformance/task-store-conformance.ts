/**
 * The one conformance suite every TaskStore implementation must pass, in the spirit of River's
 * riverdrivertest and tower-mcp's store_contracts: the memory store, the PostgreSQL store, and any
 * store a user writes run exactly these checks.
 *
 * Usage, from a vitest file:
 *
 *     runTaskStoreConformance({
 *       name: 'MyStore',
 *       capabilities: { maxTasks: true, maxRetainedBytes: false },
 *       createStore: async (options) => new MyStore(options),
 *     });
 *
 * Every store a test creates is closed after it. Waits are real but short (ttls of ~150 ms), and
 * anything that must happen promptly is bounded at 3 s, so a broken store fails instead of hanging.
 */
import { describe } from 'vitest';
import { cancellationConformance } from './cancellation.js';
import { closingConformance } from './closing.js';
import { concurrencyConformance } from './concurrency.js';
import { expiryConformance } from './expiry.js';
import { capabilities, type ConformanceTarget } from './harness.js';
import { inputRequestConformance } from './input-requests.js';
import { leaseConformance } from './leases.js';
import { lifecycleConformance } from './lifecycle.js';
import { listingConformance } from './listing.js';
import { referenceExampleConformance } from './reference-examples.js';
import { retentionConformance } from './retention.js';
import { taskChangeConformance } from './task-changes.js';
import { validationConformance } from './validation.js';
import { valueConformance } from './values.js';
import { waitingConformance } from './waiting.js';

export type { ConformanceCapabilities, ConformanceTarget, ReapableTaskStore, StoreOptions } from './harness.js';

/** Registers the whole suite (describe/it blocks) for `target`. */
export function runTaskStoreConformance(target: ConformanceTarget): void {
  describe(`TaskStore conformance: ${target.name}`, () => {
    lifecycleConformance(target);
    expiryConformance(target);
    inputRequestConformance(target);
    cancellationConformance(target);
    waitingConformance(target);
    closingConformance(target);
    listingConformance(target);
    retentionConformance(target);
    validationConformance(target);
    valueConformance(target);
    concurrencyConformance(target);
    referenceExampleConformance(target);
    leaseConformance(target);
    if (capabilities(target).changeFeed) taskChangeConformance(target);
  });
}
