/**
 * bench/results.json: the latest result of each benchmark, each with the machine and the moment
 * it was measured, so that running one benchmark again replaces its section and keeps the rest.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { GrowthResult } from './growth.js';
import type { IndexResult } from './indexes.js';
import type { LifecycleResult } from './lifecycle.js';
import type { Machine } from './machine.js';
import type { McpResult } from './mcp.js';
import type { MemoryResult } from './memory.js';
import type { ReaperResult } from './reaper.js';
import type { WakeResult } from './wake-latency.js';

export interface Section<T> {
  measuredAt: string;
  /** `full` (the sizes the targets are stated for), or a smaller preset: read those as a trial run. */
  preset: string;
  machine: Machine;
  result: T;
}

export interface BenchSections {
  lifecycle: Section<LifecycleResult>;
  wake: Section<WakeResult>;
  mcp: Section<McpResult>;
  growth: Section<GrowthResult>;
  /**
   * The opt-in run with 10,000,000 tasks, kept apart: with the largest table on the same server,
   * the smaller ones lose their share of the cache, so their figures belong to this run only.
   */
  growthTenMillion: Section<GrowthResult>;
  indexes: Section<IndexResult>;
  reaper: Section<ReaperResult>;
  memory: Section<MemoryResult>;
}

export type SectionName = keyof BenchSections;
export const SECTION_NAMES: SectionName[] = ['lifecycle', 'wake', 'mcp', 'growth', 'growthTenMillion', 'indexes', 'reaper', 'memory'];
/** What `npm run bench:all` runs unless told otherwise: all but the opt-in 10,000,000-task run. */
export const DEFAULT_SECTIONS: SectionName[] = SECTION_NAMES.filter((name) => name !== 'growthTenMillion');

export interface BenchResults {
  updatedAt: string;
  sections: Partial<BenchSections>;
}

export function readResults(path: string): BenchResults {
  if (!existsSync(path)) return { updatedAt: new Date().toISOString(), sections: {} };
  return JSON.parse(readFileSync(path, 'utf8')) as BenchResults;
}

export function writeResults(path: string, results: BenchResults): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}
