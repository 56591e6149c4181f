/** The cancellation token a task's handler holds: raised once, with the first reason, for good. */
import { describe, expect, it } from 'vitest';
import { CancellationSource } from '../../src/contract/cancellation.js';

describe('CancellationToken', () => {
  it('keeps the first reason it was raised with, whether its signal was read before or after', async () => {
    const early = new CancellationSource();
    const earlySignal = early.token.signal;
    early.cancel('cancelled');
    early.cancel('expired');
    expect(earlySignal.reason).toBe('cancelled');

    const late = new CancellationSource();
    late.cancel('expired');
    late.cancel('cancelled');
    expect(late.token.signal.aborted).toBe(true);
    expect(late.token.signal.reason).toBe('expired');
    expect(late.isCancelled).toBe(true);
    await late.token.whenCancelled();
  });

  it('hands out one signal, so listeners added through it all hear the raise', async () => {
    const source = new CancellationSource();
    expect(source.token.signal).toBe(source.token.signal);
    expect(source.isCancelled).toBe(false);
    let heard = 0;
    source.token.signal.addEventListener('abort', () => heard++);
    const raised = source.token.whenCancelled();
    source.cancel('cancelled');
    await raised;
    expect(heard).toBe(1);
    expect(source.token.isCancelled).toBe(true);
  });
});
