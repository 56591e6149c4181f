/**
 * A task's cancellation signal. It is raised by `cancelTask` and by TTL expiry, and never lowered.
 * Cancellation is cooperative: a handler checks `isCancelled` between steps or passes `signal` to
 * APIs that accept one.
 *
 * Only the store raises a token; it keeps the matching {@link CancellationSource}.
 */
export class CancellationToken {
  readonly signal: AbortSignal;

  constructor(signal: AbortSignal) {
    this.signal = signal;
  }

  get isCancelled(): boolean {
    return this.signal.aborted;
  }

  /** Resolves when the token is raised; at once if it already is. */
  whenCancelled(): Promise<void> {
    if (this.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.signal.addEventListener('abort', () => resolve(), { once: true }));
  }
}

/** The raising side of a {@link CancellationToken}, held by the store that issued the token. */
export class CancellationSource {
  private readonly controller = new AbortController();
  readonly token = new CancellationToken(this.controller.signal);

  get isCancelled(): boolean {
    return this.controller.signal.aborted;
  }

  cancel(reason: 'cancelled' | 'expired'): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }
}
