/**
 * Which timers and sockets a piece of code leaves behind: every Node resource of the tracked kinds
 * created between `start()` and `stop()` is remembered, with the stack that made it, until Node
 * destroys it (a timer that fired or was cleared, a socket that closed).
 */
import { createHook } from 'node:async_hooks';

const TRACKED = new Set(['Timeout', 'TCPWRAP', 'TCPCONNECTWRAP']);

export interface ResourceTracker {
  /** Stops remembering new resources; those already remembered are still followed. */
  stop(): void;
  /** The remembered resources Node has not destroyed yet, each as its kind and creation stack. */
  alive(): string[];
  /** Stops following everything. */
  dispose(): void;
}

export function trackResources(): ResourceTracker {
  const live = new Map<number, string>();
  let recording = true;
  const hook = createHook({
    init(asyncId, type) {
      if (!recording || !TRACKED.has(type)) return;
      const stack = (new Error().stack ?? '').split('\n').slice(2, 12).join('\n');
      live.set(asyncId, `${type}\n${stack}`);
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  }).enable();
  return {
    stop: () => {
      recording = false;
    },
    alive: () => [...live.values()],
    dispose: () => {
      hook.disable();
    },
  };
}
