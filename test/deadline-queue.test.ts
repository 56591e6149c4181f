import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue, scheduleRepeating } from '../src/contract/timers.js';

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


// The same contract on fake timers (Date is faked too), so "on time" can be checked exactly.
describe('DeadlineQueue on fake timers', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  // Shuffled, with some deadlines equal (5, 10 and 30 twice each).
  const OFFSETS = [30, 10, 50, 10, 80, 20, 95, 5, 60, 30, 70, 40, 15, 85, 45, 25, 55, 5, 65, 35];

  /** Schedules every offset; `fired` records [label, time it fired]. */
  function scheduleAll(queue: DeadlineQueue) {
    const start = Date.now();
    const fired: [number, number][] = [];
    const cancels = OFFSETS.map((offset, label) => queue.schedule(start + offset, () => fired.push([label, Date.now() - start])));
    return { fired, cancels };
  }

  /** The labels that should fire, in deadline order (equal deadlines in any order, so sorted by label too). */
  const expectedOrder = (labels: number[]) => [...labels].sort((a, b) => OFFSETS[a]! - OFFSETS[b]! || a - b);
  const byTimeThenLabel = (fired: [number, number][]) => [...fired].sort((a, b) => a[1] - b[1] || a[0] - b[0]);

  it('fires 20 shuffled deadlines, some equal, each exactly once at its own time', () => {
    const queue = new DeadlineQueue();
    const { fired } = scheduleAll(queue);
    vi.advanceTimersByTime(4);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(500);
    // Each fired at exactly its deadline, and in firing order the times never go back.
    expect(fired.map(([, time]) => time)).toEqual([...OFFSETS].sort((a, b) => a - b));
    expect(byTimeThenLabel(fired).map(([label]) => label)).toEqual(expectedOrder(OFFSETS.map((_, label) => label)));
    expect(fired.every(([label, time]) => time === OFFSETS[label])).toBe(true);
  });

  // Cancelling every pair (i, j) removes the root, middle and last heap elements in turn.
  it('a cancelled deadline never fires and every other still does, on time, whichever is cancelled', () => {
    for (let i = 0; i < OFFSETS.length; i++) {
      for (const j of [i, (i * 7 + 3) % OFFSETS.length, (i + 1) % OFFSETS.length]) {
        const queue = new DeadlineQueue();
        const { fired, cancels } = scheduleAll(queue);
        cancels[i]!();
        cancels[j]!();
        vi.advanceTimersByTime(500);
        const kept = OFFSETS.map((_, label) => label).filter((label) => label !== i && label !== j);
        expect(byTimeThenLabel(fired).map(([label]) => label), `cancelled ${i} and ${j}`).toEqual(expectedOrder(kept));
        expect(fired.every(([label, time]) => time === OFFSETS[label])).toBe(true);
      }
    }
  });

  // Seeded random schedules with random cancellations reach heap shapes no hand-picked case does
  // (such as a replacement that must move up past its new parent).
  it('fires in deadline order for random schedules with random cancellations', () => {
    let seed = 12345;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    for (let trial = 0; trial < 200; trial++) {
      const queue = new DeadlineQueue();
      const start = Date.now();
      const offsets = Array.from({ length: 5 + random(40) }, () => 1 + random(100));
      const fired: number[] = [];
      const cancels = offsets.map((offset, label) => queue.schedule(start + offset, () => fired.push(label)));
      const cancelled = new Set(offsets.map(() => random(offsets.length)).slice(0, random(offsets.length)));
      for (const label of cancelled) cancels[label]!();
      vi.advanceTimersByTime(200);
      const kept = offsets.map((_, label) => label).filter((label) => !cancelled.has(label));
      expect(fired.map((label) => offsets[label]), `trial ${trial}`).toEqual(kept.map((label) => offsets[label]!).sort((a, b) => a - b));
      expect([...fired].sort((a, b) => a - b)).toEqual(kept);
    }
  });

  it('cancelling after some have fired removes exactly the ones cancelled', () => {
    const queue = new DeadlineQueue();
    const { fired, cancels } = scheduleAll(queue);
    vi.advanceTimersByTime(30); // labels with offsets 5..30 fired
    for (const label of [4, 8, 12]) cancels[label]!(); // offsets 80, 60, 15 (already fired)
    vi.advanceTimersByTime(500);
    const kept = OFFSETS.map((_, label) => label).filter((label) => label !== 4 && label !== 8);
    expect(byTimeThenLabel(fired).map(([label]) => label)).toEqual(expectedOrder(kept));
  });

  it('a deadline earlier than the current earliest fires on time, not when the earlier timer would', () => {
    const queue = new DeadlineQueue();
    const start = Date.now();
    const fired: [string, number][] = [];
    queue.schedule(start + 100, () => fired.push(['late', Date.now() - start]));
    queue.schedule(start + 10, () => fired.push(['early', Date.now() - start]));
    queue.schedule(start + 50, () => fired.push(['middle', Date.now() - start]));
    vi.advanceTimersByTime(200);
    expect(fired).toEqual([
      ['early', 10],
      ['middle', 50],
      ['late', 100],
    ]);
  });

  it('cancelling a deadline after it fired, or twice, leaves the others alone', () => {
    const queue = new DeadlineQueue();
    const start = Date.now();
    const fired: string[] = [];
    const cancelA = queue.schedule(start + 10, () => fired.push('a'));
    queue.schedule(start + 20, () => fired.push('b'));
    queue.schedule(start + 30, () => fired.push('c'));
    vi.advanceTimersByTime(10);
    expect(fired).toEqual(['a']);
    cancelA();
    cancelA();
    vi.advanceTimersByTime(100);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('clear() cancels every deadline, and their cancel functions stay harmless afterwards', () => {
    const queue = new DeadlineQueue();
    const { fired, cancels } = scheduleAll(queue);
    queue.clear();
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([]);
    const later: string[] = [];
    queue.schedule(Date.now() + 10, () => later.push('x'));
    queue.schedule(Date.now() + 20, () => later.push('y'));
    queue.schedule(Date.now() + 30, () => later.push('z'));
    for (const cancel of cancels) cancel();
    vi.advanceTimersByTime(100);
    expect(later).toEqual(['x', 'y', 'z']);
  });

  // An unref'd timer costs nothing, but a queue with no deadlines should not hold one at all.
  it('holds no timer once every deadline is cancelled or cleared', () => {
    const queue = new DeadlineQueue();
    const { cancels } = scheduleAll(queue);
    expect(vi.getTimerCount()).toBe(1); // one timer for all of them
    for (const cancel of cancels) cancel();
    expect(vi.getTimerCount()).toBe(0);
    scheduleAll(queue);
    queue.clear();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never fires synchronously, even for a deadline already past', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    queue.schedule(Date.now() - 50, () => fired.push('past'));
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['past']);
  });

  // setTimeout cannot wait longer than 2^31-1 ms; a longer deadline must neither fire early nor be lost.
  it('fires a deadline 60 days away at its time, not before', () => {
    const queue = new DeadlineQueue();
    const start = Date.now();
    const day = 24 * 60 * 60 * 1000;
    const fired: number[] = [];
    queue.schedule(start + 60 * day, () => fired.push(Date.now() - start));
    vi.advanceTimersByTime(60 * day - 1);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([60 * day]);
  });
});

describe('scheduleRepeating on fake timers', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every interval until the function it returns stops it', () => {
    let runs = 0;
    const stop = scheduleRepeating(10, () => runs++);
    vi.advanceTimersByTime(35);
    expect(runs).toBe(3);
    stop();
    vi.advanceTimersByTime(100);
    expect(runs).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs an interval of 0 or less every millisecond', () => {
    let runs = 0;
    const stop = scheduleRepeating(0, () => runs++);
    vi.advanceTimersByTime(5);
    stop();
    expect(runs).toBe(5);
  });

  it('does not run an interval longer than setInterval allows every millisecond', () => {
    let runs = 0;
    const stop = scheduleRepeating(2 ** 40, () => runs++);
    vi.advanceTimersByTime(10_000);
    stop();
    expect(runs).toBe(0);
  });
});
