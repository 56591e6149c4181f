/**
 * Side effects held back until an operation has finished changing state.
 *
 * Raising a token runs its abort listeners synchronously, and a listener may call straight back
 * into the store (a handler that fails its task when cancelled, say). If that happened in the
 * middle of a transition, the listener would see, and could interleave with, a half-applied change.
 * So an operation queues its token raises and waiter wake-ups here, and they run once it is done.
 */
export class EffectQueue {
  private pending: (() => void)[] | null = null;

  /**
   * Runs `operation`, then every effect it queued, in order. Effects run even when the operation
   * throws: a refused completion still ends its task and must still wake the task's waiters.
   */
  run<T>(operation: () => T): T {
    const outer = this.pending;
    const effects: (() => void)[] = [];
    this.pending = effects;
    try {
      return operation();
    } finally {
      this.pending = outer;
      for (const effect of effects) effect();
    }
  }

  /** Queues `effect` for the end of the running operation; with none running, runs it now. */
  defer(effect: () => void): void {
    if (this.pending) this.pending.push(effect);
    else effect();
  }
}
