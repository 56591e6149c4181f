/**
 * The tools the official MCP conformance suite's `tasks-*` scenarios call, registered on a
 * {@link TaskRouter}. Each is the smallest honest version of what its scenario describes, and
 * each long-running one stops when its task is cancelled.
 */
import { acceptedContent, inputRequired, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskRouter } from '../../src/router/index.js';

/** Resolves after `ms`, or rejects with the signal's reason as soon as it is aborted. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

const confirmation = z.object({ confirm: z.boolean() });
const userName = z.object({ name: z.string() });

export function registerConformanceTools(router: TaskRouter): TaskRouter {
  return router
    .tool(
      'greet',
      { description: 'Greets someone, synchronously.', inputSchema: z.object({ name: z.string() }) },
      ({ name }) => text(`Hello, ${name}!`),
    )
    .tool(
      'slow_compute',
      {
        description: 'Works for `seconds` seconds (0 answers at once), then reports; stops when cancelled.',
        inputSchema: z.object({ seconds: z.number().min(0).max(3600), label: z.string().optional() }),
        taskSupport: 'optional',
        immediate: ({ seconds }) => seconds === 0,
      },
      async ({ seconds, label }, { signal }) => {
        await sleep(seconds * 1000, signal);
        return text(`Computed ${label ?? 'result'} in ${seconds}s`);
      },
    )
    .tool(
      'confirm_delete',
      {
        description: 'Asks the client to confirm, then "deletes" the file.',
        inputSchema: z.object({ filename: z.string() }),
        taskSupport: 'optional',
      },
      ({ filename }, { inputResponses }) => {
        const answer = acceptedContent(inputResponses, 'confirm', confirmation);
        if (answer === undefined && inputResponses['confirm'] === undefined) {
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({ message: `Delete ${filename}?`, requestedSchema: confirmation }),
            },
          });
        }
        return text(answer?.confirm ? `Deleted ${filename}` : `Kept ${filename}`);
      },
    )
    .tool(
      'multi_input',
      {
        description: 'Asks two questions at once and answers when both are answered.',
        taskSupport: 'optional',
      },
      (_args, { inputResponses }) => {
        if (inputResponses['first'] === undefined || inputResponses['second'] === undefined) {
          return inputRequired({
            inputRequests: {
              first: inputRequired.elicit({ message: 'First name?', requestedSchema: userName }),
              second: inputRequired.elicit({ message: 'Second name?', requestedSchema: userName }),
            },
          });
        }
        const first = acceptedContent(inputResponses, 'first', userName)?.name ?? '(declined)';
        const second = acceptedContent(inputResponses, 'second', userName)?.name ?? '(declined)';
        return text(`Received ${first} and ${second}`);
      },
    )
    .tool(
      'failing_job',
      { description: 'Runs for about a second, then reports a tool execution error.', taskSupport: 'required' },
      async (_args, { signal }) => {
        await sleep(1000, signal);
        return { ...text('The job failed: the input was rejected'), isError: true };
      },
    )
    .tool(
      'protocol_error_job',
      { description: 'Ends in a JSON-RPC error rather than a result.', taskSupport: 'optional' },
      () => {
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'The job crashed before producing a result');
      },
    )
    .tool(
      'test_tool_with_task',
      {
        description: 'Asks for a name over multi round-trip requests, then finishes the work as a task.',
        inputSchema: z.object({ user_name: z.string().optional() }),
        taskSupport: 'required',
        prepare: (args, { inputResponses }) => {
          if (args.user_name !== undefined) return;
          const answer = acceptedContent(inputResponses, 'user_name', userName);
          if (answer === undefined) {
            return inputRequired({
              inputRequests: {
                user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: userName }),
              },
            });
          }
          return { arguments: { user_name: answer.name } };
        },
      },
      async ({ user_name }, { signal }) => {
        await sleep(200, signal);
        return text(`Hello, ${user_name ?? 'stranger'}! The task is done.`);
      },
    );
}
