/**
 * The memory store's retention limits, with their defaults, and the errors they raise.
 *
 * Defaults are deliberately finite (tower-mcp's `TaskRetentionLimits::default`): an in-process map
 * is bounded only by what the store refuses, so an unbounded default would let any client exhaust
 * the process's memory.
 *
 * Error messages carry sizes and limits only, never the rejected content or the owner, so they are
 * safe to log or return to a client.
 */
import { TaskStoreError } from '../contract/errors.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, checkLimits } from '../contract/retention.js';
import type { RetentionLimits } from '../contract/types.js';

/** Live tasks plus tombstones. */
export const DEFAULT_MAX_TASKS = 1024;
/** 64 MiB of payloads across every task. */
export const DEFAULT_MAX_RETAINED_BYTES = 64 * 1024 * 1024;

export interface ResolvedLimits {
  maxTasks: number;
  maxPayloadBytes: number;
  maxRetainedBytes: number;
  /** null: no per-owner quota. */
  maxTasksPerOwner: number | null;
}

/** Validates the caller's limits (positive safe integers) and fills in the defaults. */
export function resolveLimits(limits: RetentionLimits | undefined): ResolvedLimits {
  checkLimits(limits);
  return {
    maxTasks: limits?.maxTasks ?? DEFAULT_MAX_TASKS,
    maxPayloadBytes: limits?.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    maxRetainedBytes: limits?.maxRetainedBytes ?? DEFAULT_MAX_RETAINED_BYTES,
    maxTasksPerOwner: limits?.maxTasksPerOwner ?? null,
  };
}

export function taskCountExceeded(maxTasks: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `the store already retains ${maxTasks} tasks (live and expired), its maxTasks limit`,
  );
}

export function ownerQuotaExceeded(maxTasksPerOwner: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `the task's owner already has ${maxTasksPerOwner} unexpired tasks, its maxTasksPerOwner limit`,
  );
}

export function retainedBytesExceeded(wouldRetain: number, maxRetainedBytes: number): TaskStoreError {
  return new TaskStoreError(
    'retention_limit_exceeded',
    `this would bring the store's retained payloads to ${wouldRetain} bytes as JSON, over its limit of ${maxRetainedBytes} bytes`,
  );
}
