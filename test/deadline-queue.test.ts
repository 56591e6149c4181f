import { describe, expect, it } from 'vitest';
import { DeadlineQueue } from '../src/contract/timers.js';

/** Resolves once `count` deadlines have fired, with their labels in firing order. */
function collector(count: number) {
  const fired: number[] = [];
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  return {
    fired,
    all,
    fire: (label: number) => () => {
      fired.push(label);
      if (fired.length === count) done();
    },
  };
}

describe('DeadlineQueue', () => {
  it('fires every deadline once, earliest first, whatever order they were scheduled in', async () => {
    const queue = new DeadlineQueue();
    const now = Date.now();
    const labels = Array.from({ length: 40 }, (_, i) => (i * 17) % 40);
    const { fired, all, fire } = collector(labels.length);
    for (const label of labels) queue.schedule(now + 5 + label * 2, fire(label));
    await all;
    expect(fired).toEqual([...labels].sort((a, b) => a - b));
  });

  it('never fires a cancelled deadline, including the earliest and the last one left', async () => {
    const queue = new DeadlineQueue();
    const now = Date.now();
    const kept = [3, 5, 8];
    const { fired, all, fire } = collector(kept.length);
    const cancels = Array.from({ length: 10 }, (_, label) => queue.schedule(now + 5 + label * 3, fire(label)));
    cancels.forEach((cancel, label) => {
      if (!kept.includes(label)) cancel();
    });
    cancels[0]!(); // cancelling twice is harmless
    queue.schedule(now + 1, fire(-1))(); // scheduled and cancelled at once
    await all;
    await new Promise((resolve) => setTimeout(resolve, 50)); // room for anything that should not fire
    expect(fired).toEqual(kept);
  });

  it('clear() cancels everything, and the queue keeps working afterwards', async () => {
    const queue = new DeadlineQueue();
    const { fired, all, fire } = collector(1);
    for (let label = 0; label < 5; label++) queue.schedule(Date.now() + 5, fire(label));
    queue.clear();
    queue.schedule(Date.now() + 10, fire(99));
    await all;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fired).toEqual([99]);
  });

  it('a deadline scheduled while another fires is armed too', async () => {
    const queue = new DeadlineQueue();
    const now = Date.now();
    const { fired, all, fire } = collector(3);
    queue.schedule(now + 5, () => {
      fire(1)();
      queue.schedule(Date.now() + 1, fire(2));
    });
    queue.schedule(now + 60, fire(3));
    await all;
    expect(fired[0]).toBe(1);
    expect([...fired].sort()).toEqual([1, 2, 3]);
  });
});
