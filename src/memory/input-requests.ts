/**
 * The input-request protocol on a memory record: issuing a set of requests and taking answers.
 * The rules themselves (spent keys, which answers count) are the contract's, shared with the
 * PostgreSQL store; this module applies them to a {@link LiveTask}.
 */
import { checkKeysReusable, classifyResponses } from '../contract/input-requests.js';
import { sortedKeys } from '../contract/json.js';
import { statusMessages } from '../contract/messages.js';
import type { AppliedInputResponses, InputRequest, InputRequests, InputResponses } from '../contract/types.js';
import type { Retention } from './retention.js';
import { sumBytes, type LiveTask, type Sized } from './task-record.js';
import type { TaskTable } from './task-table.js';

/**
 * Parks an open task in `input_required` on `requests`, which replace the outstanding set; keys
 * left out are superseded. Every check comes before any change.
 */
export function issueRequests(
  task: LiveTask,
  requests: InputRequests,
  message: string | null,
  retention: Retention,
  table: TaskTable,
): void {
  const issued = new Map<string, Sized<InputRequest>>();
  for (const key of sortedKeys(Object.keys(requests))) {
    issued.set(key, retention.payload(`requests.${key}`, requests[key]!));
  }
  retention.checkMessage(message);
  checkKeysReusable(requests, (key) => {
    if (task.answeredKeys.has(key) || task.supersededKeys.has(key)) return { state: 'spent' };
    const current = task.outstanding.get(key);
    return current && { state: 'outstanding', request: current.value };
  });
  retention.reserve(sumBytes(issued) - sumBytes(task.outstanding));

  for (const key of task.outstanding.keys()) {
    if (!issued.has(key)) task.supersededKeys.add(key);
  }
  table.update(task, () => {
    task.outstanding = issued;
    task.status = 'input_required';
    task.statusMessage = message ?? statusMessages.inputRequired;
    task.lastUpdatedAtMs = Date.now();
  });
}

/**
 * Records the answers to outstanding requests of an open task. Only accepted answers are measured
 * against the limits, so an oversized stray answer costs nothing. Answering the last outstanding
 * request returns the task to `working`.
 */
export function answerRequests(
  task: LiveTask,
  responses: InputResponses,
  retention: Retention,
  table: TaskTable,
): AppliedInputResponses {
  const waiting = task.status === 'input_required';
  const outcome = classifyResponses(Object.keys(responses), new Set(waiting ? task.outstanding.keys() : []));
  const accepted = new Map<string, Sized<Record<string, unknown>>>();
  for (const key of outcome.accepted) {
    accepted.set(key, retention.payload(`responses.${key}`, responses[key]!));
  }
  let answeredBytes = 0;
  for (const key of accepted.keys()) answeredBytes += task.outstanding.get(key)!.bytes;
  retention.reserve(sumBytes(accepted) - answeredBytes);

  table.update(task, () => {
    for (const [key, response] of accepted) {
      task.outstanding.delete(key);
      task.answeredKeys.add(key);
      task.responses.set(key, response);
    }
    if (accepted.size > 0) task.lastUpdatedAtMs = Date.now();
    if (waiting && outcome.complete) {
      task.status = 'working';
      task.statusMessage = statusMessages.resumed;
      task.lastUpdatedAtMs = Date.now();
    }
  });
  return outcome;
}
