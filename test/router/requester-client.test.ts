/**
 * The router driven by the official requester client (`@modelcontextprotocol/ext-tasks/client`
 * over the SDK v2 `Client`), end to end over HTTP: a task that completes, one that fails, one that
 * is cancelled (and whose handler sees the cancellation), and one that asks for input. Each runs on
 * one instance with the memory store and on two instances sharing PostgreSQL behind a round-robin
 * proxy, where consecutive requests of one client alternate instances.
 */
import { describe, expect, it } from 'vitest';
import { resultFromTaskOutcome, TaskFailedError } from '@modelcontextprotocol/ext-tasks/client';
import { within } from '../support/time.js';
import { DEPLOYMENTS, useDeployments } from './support/deployments.js';
import { connectRequester } from './support/requester.js';

const textOf = (result: unknown) => ((result as { content: { text: string }[] }).content[0]?.text ?? '');

describe.each(DEPLOYMENTS)('requester client, %s', (kind) => {
  const { deploy } = useDeployments();

  it('runs a task to completion and hands back its result', async () => {
    const { url } = await deploy(kind);
    const requester = await connectRequester(url);
    try {
      const execution = await requester.session.callTool('slow_compute', { seconds: 0.3, label: 'report' });
      expect(execution.kind).toBe('task');
      const { outcome } = await within('the task settling', execution.settle());
      expect(outcome.status).toBe('completed');
      expect(textOf(resultFromTaskOutcome(outcome))).toBe('report: computed for 0.3 s');
    } finally {
      await requester.close();
    }
  });

  it('reports a protocol error as a failed task, and a tool error as a completed one', async () => {
    const { url } = await deploy(kind);
    const requester = await connectRequester(url);
    try {
      const failing = await requester.session.callTool('protocol_error_job', {});
      const { outcome } = await within('the failing task settling', failing.settle());
      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      expect(outcome.error).toBeInstanceOf(TaskFailedError);
      expect(outcome.error.code).toBe(-32603);
      expect(outcome.error.message).toBe('protocol_error_job: internal error, as it always is');

      const toolError = await requester.session.callTool('failing_job', {});
      const settled = await within('the tool-error task settling', toolError.settle());
      expect(settled.outcome.status).toBe('completed');
      const result = resultFromTaskOutcome(settled.outcome) as { isError?: boolean };
      expect(result.isError).toBe(true);
    } finally {
      await requester.close();
    }
  });

  it('cancels a task: the handler sees its signal fire and the task ends cancelled', async () => {
    const { url, witness } = await deploy(kind);
    const requester = await connectRequester(url);
    try {
      const execution = await requester.session.callTool('wait_for_cancel', {});
      if (execution.kind !== 'task') throw new Error('wait_for_cancel must run as a task');
      const taskId = execution.handle.taskId;
      await within('the handler starting', witness.whenStarted(taskId));
      await execution.cancel();
      expect(await within('the handler seeing the cancellation', witness.whenStopped(taskId))).toBe(witness.started.get(taskId));

      const observer = await connectRequester(url);
      try {
        const snapshot = await observer.session.task(taskId).snapshot();
        expect(snapshot.status).toBe('cancelled');
      } finally {
        await observer.close();
      }
    } finally {
      await requester.close();
    }
  });

  it('asks for input, takes the answer through tasks/update, and resumes to completion', async () => {
    const { url } = await deploy(kind);
    const asked: string[] = [];
    const requester = await connectRequester(url, {
      input: {
        elicitation: async (request) => {
          asked.push(String((request.params as { message?: string }).message));
          return { action: 'accept', content: { confirm: true } };
        },
        sampling: async () => {
          throw new Error('no sampling in this test');
        },
        roots: async () => ({ roots: [] }),
      },
    });
    try {
      const execution = await requester.session.callTool('confirm_delete', { filename: 'notes.txt' });
      expect(execution.kind).toBe('task');
      const states: string[] = [];
      const { outcome } = await within(
        'the input-required task settling',
        execution.settle({ onEvent: (event) => void (event.type === 'task' && states.push(event.task.status)) }),
      );
      expect(outcome.status).toBe('completed');
      expect(textOf(resultFromTaskOutcome(outcome))).toBe('Deleted notes.txt');
      expect(asked).toEqual(['Delete notes.txt?']);
      expect(states).toContain('input_required');
    } finally {
      await requester.close();
    }
  });
});
