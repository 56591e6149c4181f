/**
 * The resume hooks an instance registered, and how both stores run one on a task they claimed
 * (the rules are in ./leases.ts).
 */
import { parse } from './validation.js';
import { LOST_RUNNER_CODE, resumeHookSchema, toolNameSchema, type ResumeHook } from './leases.js';
import type { TaskStore } from './types.js';

/** A rescued task this instance took for a resume. */
export interface ClaimedTask {
  taskId: string;
  /** Rescues before this resume, this one included. */
  attempts: number;
  lostRunner: string | null;
  lastStatusMessage: string | null;
}

export class ResumeHooks {
  private readonly hooks = new Map<string, ResumeHook>();

  get size(): number {
    return this.hooks.size;
  }

  toolNames(): string[] {
    return [...this.hooks.keys()];
  }

  has(toolName: string): boolean {
    return this.hooks.has(toolName);
  }

  /** See {@link TaskLeases.onResume}: the last hook registered for a tool wins. */
  register(toolName: string, hook: ResumeHook): () => void {
    const name = parse(toolNameSchema, toolName, 'toolName');
    const registered = parse(resumeHookSchema, hook, 'hook');
    this.hooks.set(name, registered);
    return () => {
      if (this.hooks.get(name) === registered) this.hooks.delete(name);
    };
  }

  /**
   * Runs the hook of a claimed task's tool. A hook that throws fails the task with the reason.
   * `unregistered`: the hook went away between the claim and now, so the caller hands the task on.
   */
  async run(store: TaskStore, claimed: ClaimedTask): Promise<'ran' | 'unregistered' | 'gone'> {
    const { taskId } = claimed;
    const [task, context] = await Promise.all([store.getTask(taskId), store.resumeContext(taskId)]);
    if (!task || !context) return 'gone';
    const hook = this.hooks.get(context.toolName);
    if (!hook) return 'unregistered';
    try {
      await hook({ taskId, task, context, previousAttempts: claimed.attempts, lostRunner: claimed.lostRunner, lastStatusMessage: claimed.lastStatusMessage });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      await store.failTask(taskId, { code: LOST_RUNNER_CODE, message: `resuming ${context.toolName} failed: ${reason}` });
    }
    return 'ran';
  }
}
