/**
 * The server `npm start` runs (scripts/server) serves both protocol eras on one URL: a client that
 * negotiates 2026-07-28 gets the tasks extension through the router, a 2025-11-25 client the SDK 1.x
 * tasks, from the same store.
 */
import { describe, expect, it } from 'vitest';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { within } from '../support/time.js';
import { useMcpTestbed } from '../sdk/support.js';
import { connectRequester } from './support/requester.js';

const testbed = useMcpTestbed();

describe('npm start serves both eras on /mcp', () => {
  it('gives a 2026-07-28 client the tasks extension and a 2025-11-25 client the SDK 1.x tasks', async () => {
    const server = await testbed.server();
    const requester = await connectRequester(server.url.href, { principal: 'alice' });
    try {
      expect(requester.client.getProtocolEra()).toBe('modern');
      expect(requester.client.getServerCapabilities()?.extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
      const execution = await requester.session.callTool('slow_compute', { seconds: 0.2, label: 'modern' });
      expect(execution.kind).toBe('task');
      const { outcome } = await within('the 2026 task settling', execution.settle());
      expect(resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: 'modern: computed for 0.2 s' }] });
    } finally {
      await requester.close();
    }

    const legacy = await testbed.client(server.url, { principal: 'alice' });
    expect(legacy.getServerCapabilities()?.tasks).toBeDefined();
    expect(legacy.getServerCapabilities()?.extensions).toBeUndefined();
    const result = await legacy.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'legacy' } }, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'legacy: computed for 0 s' }]);
  });
});
