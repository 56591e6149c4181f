/**
 * A task's cancellation signal. It is raised by `cancelTask` and by TTL expiry, and never lowered.
 * Cancellation is cooperative: a handler checks `isCancelled` between steps or passes `signal` to
 * APIs that accept one.
 *
 * Only the store raises a token; it keeps the matching {@link CancellationSource}. The token's
 * `AbortSignal` is made the first time someone asks for it: a store holds a token for every task it
 * created, most of which nobody ever listens to, and an AbortController costs about 0.8 KB and
 * tens of microseconds to make.
 */
type Reason = 'cancelled' | 'expired';

/** Set by the token class below, so that only this module's {@link CancellationSource} can raise one. */
let raise: (token: CancellationToken, reason: Reason) => void;

export class CancellationToken {
  #controller: AbortController | null = null;
  #reason: Reason | null = null;

  static {
    raise = (token, reason) => {
      if (token.#reason) return;
      token.#reason = reason;
      token.#controller?.abort(reason);
    };
  }

  /** Aborted, with `'cancelled'` or `'expired'` as its reason, once the token is raised. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#reason) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get isCancelled(): boolean {
    return this.#reason !== null;
  }

  /** Resolves when the token is raised; at once if it already is. */
  whenCancelled(): Promise<void> {
    if (this.isCancelled) return Promise.resolve();
    return new Promise((resolve) => this.signal.addEventListener('abort', () => resolve(), { once: true }));
  }
}

/** The raising side of a {@link CancellationToken}, held by the store that issued the token. */
export class CancellationSource {
  readonly token = new CancellationToken();

  get isCancelled(): boolean {
    return this.token.isCancelled;
  }

  cancel(reason: Reason): void {
    raise(this.token, reason);
  }
}
