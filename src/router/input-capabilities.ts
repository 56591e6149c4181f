/**
 * A tool may only ask for input the client said it can give: an elicitation needs the
 * `elicitation` capability, a sampling request `sampling`, a roots listing `roots`. Asking anyway
 * would park a task (or a multi round-trip call) on a question nobody will answer.
 */
import type { InputRequests } from '../contract/types.js';

const CAPABILITY_FOR_METHOD: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** The capabilities `requests` need that `clientCapabilities` lacks, or undefined when none. */
export function missingInputCapabilities(requests: InputRequests, clientCapabilities: unknown): Record<string, object> | undefined {
  const declared = isObject(clientCapabilities) ? clientCapabilities : {};
  const missing: Record<string, object> = {};
  for (const request of Object.values(requests)) {
    const capability = CAPABILITY_FOR_METHOD[request.method];
    if (capability !== undefined && !isObject(declared[capability])) missing[capability] = {};
  }
  return Object.keys(missing).length === 0 ? undefined : missing;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
