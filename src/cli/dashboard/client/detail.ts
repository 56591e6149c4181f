/**
 * The browser side, part two: the task detail panel, what `mcp-task-store show` tells: the task's
 * fields, its runner's lease, its outcome, its input requests (outstanding and answered) and its
 * timeline from `task_transitions`. With actions allowed, a task still running gets a Cancel
 * button that asks to be pressed twice.
 */
import { badge, duration, el, json, owner, time } from './dom.js';
import type { TaskDetailJson } from './wire.js';

export interface DetailActions {
  /** Asks the server to cancel the task; resolves to what to tell the user. */
  cancel(taskId: string): Promise<string>;
  /** Milliseconds until `iso` on the server's clock. */
  untilServer(iso: string): number;
}

export type DetailView = ReturnType<typeof detailView>;

export function detailView(panel: HTMLElement, allowActions: boolean, actions: DetailActions) {
  const TERMINAL = ['completed', 'failed', 'cancelled'];
  let ttlCell: HTMLElement | null = null;
  let expiresAt: string | null = null;

  function field(name: string, value: string | HTMLElement): HTMLElement[] {
    return [el('dt', { text: name }), el('dd', {}, value)];
  }

  function ttlText(): string {
    if (expiresAt === null) return 'never expires';
    const left = actions.untilServer(expiresAt);
    return left <= 0 ? 'expired' : `${duration(left)} left`;
  }

  function cancelButton(taskId: string): HTMLElement {
    const note = el('span', { className: 'note' });
    const button = el('button', { className: 'cancel', text: 'Cancel task', attributes: { type: 'button' } });
    let armed: ReturnType<typeof setTimeout> | null = null;
    button.addEventListener('click', () => {
      if (!armed) {
        button.textContent = 'Confirm cancel';
        button.classList.add('armed');
        armed = setTimeout(() => {
          armed = null;
          button.textContent = 'Cancel task';
          button.classList.remove('armed');
        }, 5000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      button.disabled = true;
      note.textContent = 'cancelling…';
      actions.cancel(taskId).then(
        (message) => (note.textContent = message),
        (error: Error) => {
          note.textContent = error.message;
          button.disabled = false;
        },
      );
    });
    return el('p', { className: 'actions' }, button, ' ', note);
  }

  /** Who runs the task and until when, as `show` says it. */
  function leaseText(lease: NonNullable<TaskDetailJson['lease']>): string {
    const rescues = lease.attempts > 0 ? `; ${lease.attempts} rescue${lease.attempts === 1 ? '' : 's'}, last lost runner ${lease.lostRunner ?? '-'}` : '';
    if (lease.runnerId === null) return `none: rescued, awaiting a resume by ${time(lease.expiresAt)}${rescues}`;
    const overdue = lease.overdue ? ' (overdue: its runner stopped renewing)' : '';
    return `${lease.runnerId}, since ${time(lease.acquiredAt)}, lease until ${time(lease.expiresAt)}${overdue}${rescues}`;
  }

  function fields(detail: TaskDetailJson): HTMLElement {
    const list = el('dl', { className: 'fields' });
    const task = detail.task;
    if (task) {
      expiresAt = task.expiresAt;
      ttlCell = el('span', { text: ttlText() });
      const status = badge(task.status);
      list.append(
        ...field('status', task.expired ? el('span', {}, status, ' expired: awaiting the reaper') : status),
        ...field('tool', task.toolName),
        ...field('owner', owner(task.owner)),
        ...field('created', time(task.createdAt)),
        ...field('updated', time(task.lastUpdatedAt)),
        ...field('ttl', task.ttlMs === null ? 'none' : el('span', {}, `${duration(task.ttlMs)}, `, ttlCell)),
      );
      if (task.pollIntervalMs !== null) list.append(...field('poll interval', duration(task.pollIntervalMs)));
      if (task.cancelRequestedAt) list.append(...field('cancel', `requested ${time(task.cancelRequestedAt)}`));
      list.append(...field('message', task.statusMessage ?? '-'));
      if (detail.lease) list.append(...field('runner', leaseText(detail.lease)));
    } else if (detail.tombstone) {
      expiresAt = null;
      ttlCell = null;
      list.append(
        ...field('status', `expired ${time(detail.tombstone.expiredAt)}; a tombstone since ${time(detail.tombstone.tombstonedAt)}, its content is gone`),
        ...field('owner', owner(detail.tombstone.owner)),
      );
    }
    return list;
  }

  function outcome(detail: TaskDetailJson): HTMLElement | null {
    if (!detail.outcome) return null;
    const { kind, isError, summary } = detail.outcome;
    const heading = kind === 'error' ? 'Error' : isError ? 'Result (isError)' : 'Result';
    return el('section', {}, el('h3', { text: heading }), el('pre', { className: isError ? 'outcome error' : 'outcome', text: summary }));
  }

  function question(request: unknown): string {
    const message = (request as { params?: { message?: unknown } } | null)?.params?.message;
    return typeof message === 'string' ? message : json(request);
  }

  function inputRequests(detail: TaskDetailJson): HTMLElement {
    const section = el('section', { className: 'input-requests' }, el('h3', { text: 'Input requests' }));
    if (detail.inputRequests.length === 0) return el('section', {}, section, el('p', { className: 'empty', text: 'none' }));
    const head = el('tr', {}, ...['key', 'state', 'issued', 'settled', 'request', 'response'].map((name) => el('th', { text: name })));
    const rows = detail.inputRequests.map((request) =>
      el(
        'tr',
        { className: `request-${request.state === 'outstanding' ? 'outstanding' : request.state === 'answered' ? 'answered' : 'superseded'}`, data: { key: request.key } },
        el('td', { text: request.key }),
        el('td', { className: 'state', text: request.state }),
        el('td', { text: time(request.issuedAt) }),
        el('td', { text: time(request.settledAt) }),
        el('td', { text: question(request.request), title: json(request.request, 2000) }),
        el('td', { text: request.response === null ? '-' : json(request.response), title: json(request.response, 2000) }),
      ),
    );
    section.append(el('table', {}, el('thead', {}, head), el('tbody', {}, ...rows)));
    return section;
  }

  function timeline(detail: TaskDetailJson): HTMLElement {
    const section = el('section', { className: 'timeline' }, el('h3', { text: 'Timeline' }));
    const items = detail.history.map((step) =>
      el(
        'li',
        { data: { status: step.toStatus } },
        el('time', { text: time(step.at), attributes: { datetime: step.at } }),
        ' ',
        badge(step.toStatus),
        ' ',
        el('span', {
          className: 'after',
          text: step.fromStatus === null || step.previousStateMs === null ? 'created' : `after ${duration(step.previousStateMs)} ${step.fromStatus}`,
        }),
        step.message ? el('span', { className: 'message', text: step.message }) : null,
      ),
    );
    section.append(items.length > 0 ? el('ol', {}, ...items) : el('p', { className: 'empty', text: 'no history' }));
    return section;
  }

  return {
    show(taskId: string, detail: TaskDetailJson | null): void {
      panel.hidden = false;
      panel.dataset.taskId = taskId;
      const close = el('a', { className: 'close', text: 'close', attributes: { href: '#' } });
      const heading = el('h2', {}, 'Task ', el('code', { text: taskId }), ' ', close);
      if (!detail) {
        ttlCell = null;
        panel.replaceChildren(heading, el('p', { className: 'empty', text: 'no such task: it was discarded, or its tombstone purged' }));
        return;
      }
      const running = detail.task !== null && !detail.task.expired && !TERMINAL.includes(detail.task.status);
      panel.replaceChildren(
        heading,
        fields(detail),
        allowActions && running ? cancelButton(taskId) : '',
        outcome(detail) ?? '',
        inputRequests(detail),
        timeline(detail),
      );
    },
    hide(): void {
      panel.hidden = true;
      ttlCell = null;
      delete panel.dataset.taskId;
      panel.replaceChildren();
    },
    /** The countdown, once a second. */
    tick(): void {
      if (ttlCell) ttlCell.textContent = ttlText();
    },
  };
}
