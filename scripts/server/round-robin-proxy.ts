/**
 * A round-robin HTTP proxy on 127.0.0.1: each request goes to the next target in turn, so a
 * client's consecutive requests alternate instances, as behind a load balancer with no affinity.
 * Responses (SSE streams included) are piped through as they arrive.
 */
import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  /** The proxy's URL for the targets' path (e.g. `http://127.0.0.1:PORT/mcp`). */
  readonly url: string;
  /** How many requests each target has received, in target order. */
  readonly served: number[];
  close(): Promise<void>;
}

export async function startRoundRobinProxy(targets: string[], port = 0): Promise<RoundRobinProxy> {
  const upstreams = targets.map((target) => new URL(target));
  const served = upstreams.map(() => 0);
  let next = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const index = next++ % upstreams.length;
    served[index]! += 1;
    const upstream = upstreams[index]!;
    const proxied = forward(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: upstream.host },
      },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
      },
    );
    proxied.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502);
      outgoing.end();
    });
    outgoing.on('close', () => proxied.destroy());
    incoming.pipe(proxied);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  const path = upstreams[0]?.pathname ?? '/';
  return {
    url: `http://127.0.0.1:${address.port}${path}`,
    served,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
