/**
 * The deployments the router is tested in: one instance on a `MemoryTaskStore`, and two instances
 * on one PostgreSQL schema (each with its own `PostgresTaskStore` and pool, as two processes would
 * have) behind a round-robin proxy, so consecutive requests alternate instances.
 *
 * Every instance also carries `wait_for_cancel`, a tool that records which instance runs it and
 * finishes only when its cancellation signal fires, so a test can see a cancel reach the handler,
 * and `short_lived`, whose task expires {@link SHORT_LIVED_TTL_MS} after creation.
 */
import { afterEach } from 'vitest';
import { z } from 'zod';
import { MemoryTaskStore, type TaskStore } from '../../../src/index.js';
import type { TaskRouter } from '../../../src/router/index.js';
import { usePostgresStores } from '../../support/postgres-stores.js';
import { startRoundRobinProxy } from '../../../scripts/server/round-robin-proxy.js';
import { startRouterServer, type RunningRouter } from './router-server.js';

/** What `wait_for_cancel` saw, per task: where it ran and whether its signal fired there. */
export interface CancelWitness {
  /** Ends every run still waiting, so a failed test does not leave handlers behind. */
  release(): void;
  readonly started: Map<string, string>;
  readonly stopped: Map<string, string>;
  /** Resolves with the instance name once the task's handler has started. */
  whenStarted(taskId: string): Promise<string>;
  /** Resolves with the instance name once the task's handler has seen its signal fire. */
  whenStopped(taskId: string): Promise<string>;
}

function cancelWitness(): CancelWitness & { tool(router: TaskRouter, instance: string): void } {
  const started = new Map<string, string>();
  const stopped = new Map<string, string>();
  const released = new AbortController();
  const waiting = new Map<string, (() => void)[]>();
  const notify = (taskId: string) => {
    for (const wake of waiting.get(taskId) ?? []) wake();
    waiting.delete(taskId);
  };
  const when = (map: Map<string, string>, taskId: string) =>
    new Promise<string>((resolve) => {
      const check = () => (map.has(taskId) ? resolve(map.get(taskId)!) : waiting.set(taskId, [...(waiting.get(taskId) ?? []), check]));
      check();
    });
  return {
    release: () => released.abort(),
    started,
    stopped,
    whenStarted: (taskId) => when(started, taskId),
    whenStopped: (taskId) => when(stopped, taskId),
    tool(router, instance) {
      router.tool(
        'wait_for_cancel',
        { description: 'Runs until cancelled.', taskSupport: 'required', inputSchema: z.object({}) },
        async (_args, { taskId, signal }) => {
          started.set(taskId!, instance);
          notify(taskId!);
          await new Promise<void>((resolve) => {
            signal.addEventListener('abort', () => resolve(), { once: true });
            released.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          if (signal.aborted) stopped.set(taskId!, instance);
          notify(taskId!);
          return { content: [{ type: 'text', text: 'stopped' }] };
        },
      );
    },
  };
}

/** The TTL of `short_lived` tasks. */
export const SHORT_LIVED_TTL_MS = 300;

export interface Deployment {
  /** The URL clients use: the single instance, or the proxy in front of both. */
  readonly url: string;
  /** Each instance's own URL, to reach one directly. */
  readonly instances: RunningRouter[];
  readonly stores: TaskStore[];
  readonly witness: CancelWitness;
}

export type DeploymentKind = 'one instance on MemoryTaskStore' | 'two instances on PostgresTaskStore behind a round-robin proxy';

/** Registers per-test setup for `kind`; call `deploy()` inside a test. */
export function useDeployments(): { deploy(kind: DeploymentKind): Promise<Deployment> } {
  const postgres = usePostgresStores();
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start(store: TaskStore, instance: string, witness: ReturnType<typeof cancelWitness>) {
    const running = await startRouterServer({ store, pollIntervalMs: 100 }, (router) => {
      witness.tool(router, instance);
      router.tool(
        'short_lived',
        { description: 'Finishes at once; its task expires soon after.', taskSupport: 'required', ttlMs: SHORT_LIVED_TTL_MS },
        () => ({ content: [{ type: 'text', text: 'done' }] }),
      );
    });
    cleanups.push(() => running.close());
    return running;
  }

  return {
    async deploy(kind) {
      const witness = cancelWitness();
      cleanups.push(async () => witness.release());
      if (kind === 'one instance on MemoryTaskStore') {
        const store = new MemoryTaskStore();
        cleanups.push(() => store.close());
        const running = await start(store, 'only', witness);
        return { url: running.url, instances: [running], stores: [store], witness };
      }
      const schema = await postgres.schema();
      const stores = [postgres.open(schema), postgres.open(schema)];
      const instances = [await start(stores[0]!, 'A', witness), await start(stores[1]!, 'B', witness)];
      const proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
      cleanups.push(() => proxy.close());
      return { url: proxy.url, instances, stores, witness };
    },
  };
}

export const DEPLOYMENTS: DeploymentKind[] = [
  'one instance on MemoryTaskStore',
  'two instances on PostgresTaskStore behind a round-robin proxy',
];
