/**
 * Timers for TTL deadlines.
 *
 * `setTimeout` cannot wait longer than 2^31-1 ms (about 24.8 days; longer delays fire after 1 ms),
 * while a task's TTL may run for years. A long deadline is therefore reached in steps, each at most
 * the maximum delay, re-checking the wall clock every time.
 *
 * Every timer is unref'd: a pending expiry must never keep a process alive on its own. Both
 * stores arm their TTL deadlines with these.
 */

const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Cancels a scheduled deadline. Calling it more than once, or after it fired, is harmless. */
export type CancelDeadline = () => void;

interface Deadline {
  deadlineMs: number;
  fire: () => void;
  /** Its place in the heap; -1 once it fired or was cancelled. */
  index: number;
}

/**
 * The TTL deadlines of one store, on one timer armed for the earliest: a store holds a deadline per
 * live token and waited task, and a `setTimeout` each would cost over a kilobyte apiece. A binary
 * min-heap keeps the earliest first; a cancelled deadline leaves it at once, so a long TTL that
 * is cancelled costs nothing until it would have come.
 */
export class DeadlineQueue {
  private readonly heap: Deadline[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor = Infinity;

  /**
   * Calls `fire` once `Date.now() >= deadlineMs`. The caller handles deadlines already in the past
   * itself: this never fires synchronously.
   */
  schedule(deadlineMs: number, fire: () => void): CancelDeadline {
    const deadline: Deadline = { deadlineMs, fire, index: this.heap.length };
    this.heap.push(deadline);
    this.siftUp(deadline.index);
    if (deadlineMs < this.armedFor) this.arm();
    return () => this.remove(deadline);
  }

  /** Cancels every deadline. */
  clear(): void {
    for (const deadline of this.heap) deadline.index = -1;
    this.heap.length = 0;
    this.arm();
  }

  private remove(deadline: Deadline): void {
    const { index } = deadline;
    if (index < 0) return;
    deadline.index = -1;
    const last = this.heap.pop()!;
    if (last !== deadline) {
      this.heap[index] = last;
      last.index = index;
      this.siftDown(index);
      this.siftUp(last.index);
    }
    if (this.heap.length === 0) this.arm();
  }

  /** Sets the one timer for the earliest deadline (at most the longest delay a timer takes). */
  private arm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const earliest = this.heap[0];
    this.armedFor = earliest?.deadlineMs ?? Infinity;
    if (!earliest) return;
    const delay = Math.min(Math.max(earliest.deadlineMs - Date.now(), 1), MAX_TIMER_DELAY_MS);
    this.timer = setTimeout(() => this.fireDue(), delay);
    this.timer.unref?.();
  }

  /** A timer may wake a little before the wall clock agrees, or long before a far deadline. */
  private fireDue(): void {
    this.timer = undefined;
    const now = Date.now();
    const due: Deadline[] = [];
    while (this.heap[0] && this.heap[0].deadlineMs <= now) {
      const earliest = this.heap[0];
      this.remove(earliest);
      due.push(earliest);
    }
    this.arm();
    for (const deadline of due) deadline.fire();
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.deadlineMs <= heap[index]!.deadlineMs) return;
      this.swap(index, parent);
      index = parent;
    }
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && heap[left]!.deadlineMs < heap[smallest]!.deadlineMs) smallest = left;
      if (right < heap.length && heap[right]!.deadlineMs < heap[smallest]!.deadlineMs) smallest = right;
      if (smallest === index) return;
      this.swap(index, smallest);
      index = smallest;
    }
  }

  private swap(a: number, b: number): void {
    const heap = this.heap;
    [heap[a], heap[b]] = [heap[b]!, heap[a]!];
    heap[a]!.index = a;
    heap[b]!.index = b;
  }
}

/** A repeating, unref'd interval (clamped to what `setInterval` can honour). */
export function scheduleRepeating(intervalMs: number, run: () => void): () => void {
  const handle = setInterval(run, Math.min(Math.max(intervalMs, 1), MAX_TIMER_DELAY_MS));
  handle.unref?.();
  return () => clearInterval(handle);
}
