import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { throwawayServerFlags, type TestServer } from './test-server.js';

const IMAGE = 'postgres:18-alpine';

/**
 * Whether a Docker engine may be reachable, judged from the places testcontainers looks: its
 * properties file, DOCKER_HOST and the usual sockets. Looking first spares a machine without
 * Docker the ~0.4 s it takes to load testcontainers only to hear that there is no engine.
 */
export function mayHaveDockerEngine(): boolean {
  if (process.env.DOCKER_HOST) return true;
  // Windows talks to Docker over a named pipe; let testcontainers find out.
  if (process.platform === 'win32') return true;
  const home = homedir();
  const runtimeDir = process.env.XDG_RUNTIME_DIR;
  return [
    join(home, '.testcontainers.properties'),
    '/var/run/docker.sock',
    runtimeDir === undefined ? undefined : join(runtimeDir, 'docker.sock'),
    join(home, '.docker', 'run', 'docker.sock'),
    join(home, '.docker', 'desktop', 'docker.sock'),
    `/run/user/${process.getuid?.()}/docker.sock`,
  ].some((path) => path !== undefined && existsSync(path));
}

/** Starts PostgreSQL in a Docker container; testcontainers removes it even if the run is killed. */
export async function startContainerServer(): Promise<TestServer> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer(IMAGE)
    .withUsername('postgres')
    .withPassword('postgres')
    .withDatabase('postgres')
    .withCommand(['postgres', ...throwawayServerFlags()])
    .start();
  return {
    adminUrl: container.getConnectionUri(),
    description: `Docker container ${IMAGE}, on ${container.getHost()}:${container.getPort()}`,
    async stop() {
      await container.stop();
    },
  };
}
