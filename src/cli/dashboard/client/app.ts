/**
 * The browser side, part three: the page itself. The summary header, the filters, the tasks
 * table one keyset page at a time (Newer / Older keep the cursors, never an offset), the detail
 * panel (#task=<id>), and the live updates: one EventSource on /api/events.
 *
 * A `changes` event updates the rows it names in place at once, then the page is read again
 * when what it shows may have changed more than the event says (a new task on the first page, a
 * row leaving the filter, a ttl or a cancel request): events are hints, the rows are the truth.
 * Reads of the page and of the open task run one at a time, the latest request winning.
 */
import { detailView, type DetailView } from './detail.js';
import { badge, byId, duration, el, owner, STATUSES, time } from './dom.js';
import type { FeedState, SessionJson, SummaryJson, TaskChangeJson, TaskDetailJson, TaskLineJson, TaskPageJson } from './wire.js';

const FEED_TEXT: Record<string, string> = {
  connecting: 'connecting…',
  listening: 'live',
  reconnecting: 'listener reconnecting…',
  stale: 'stale: reading the tasks fails',
  closed: 'stopped',
  disconnected: 'disconnected from the dashboard: retrying…',
};
const body = byId('tasks-body');
const filters = byId<HTMLFormElement>('filters');
const FILTERS = ['status', 'tool', 'owner', 'since'] as const;
let session: SessionJson;
let detail: DetailView;
/** What the form says; `since` is a duration back (1h, 2d) or an ISO time, as the CLI's --since. */
let filter: Record<(typeof FILTERS)[number], string> = { status: '', tool: '', owner: '', since: '' };
/** The cursors of the pages before this one; `cursor` is this page's (null: the first). */
let earlier: (string | null)[] = [];
let cursor: string | null = null;
let next: string | null = null;
let clockOffsetMs = 0;
let openTask: string | null = null;
const rows = new Map<string, { line: TaskLineJson; status: HTMLElement; updated: HTMLElement; message: HTMLElement; ttl: HTMLElement }>();

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(path, { ...init, credentials: 'same-origin', headers: { accept: 'application/json', ...init.headers } });
  if (response.status === 401) problem('the access token is not valid (the dashboard restarted?): open the URL it printed');
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

function problem(text: string): void {
  const banner = byId('problem');
  banner.textContent = text;
  banner.hidden = false;
}

/** `run` one at a time; requests made meanwhile make one more run. */
function serial(run: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  const go = (): void => {
    running = true;
    again = false;
    run()
      .catch((error: Error) => problem(error.message))
      .finally(() => {
        running = false;
        if (again) go();
      });
  };
  return () => {
    if (running) again = true;
    else go();
  };
}

function untilServer(iso: string): number {
  return Date.parse(iso) - (Date.now() + clockOffsetMs);
}

function ttlLeft(line: TaskLineJson): string {
  if (line.expiresAt === null) return 'never';
  const left = untilServer(line.expiresAt);
  return left <= 0 ? 'expired' : duration(left);
}

function row(line: TaskLineJson): HTMLElement {
  const cells = {
    status: el('td', { className: 'status-cell' }, badge(line.status)),
    updated: el('td', { className: 'updated', text: time(line.lastUpdatedAt), title: line.lastUpdatedAt }),
    message: el('td', { className: 'message', text: line.statusMessage ?? '' }),
    ttl: el('td', { className: 'ttl', text: ttlLeft(line) }),
  };
  rows.set(line.taskId, { line, ...cells });
  const link = el('a', { text: `${line.taskId.slice(0, 8)}…`, title: line.taskId, attributes: { href: `#task=${encodeURIComponent(line.taskId)}` } });
  return el(
    'tr',
    { data: { taskId: line.taskId } },
    el('td', { className: 'id' }, link),
    cells.status,
    el('td', { className: 'tool', text: line.toolName }),
    el('td', { className: 'owner', text: owner(line.owner) }),
    el('td', { className: 'created', text: time(line.createdAt), title: line.createdAt }),
    cells.updated,
    cells.message,
    cells.ttl,
  );
}

const reloadPage = serial(async () => {
  const query = new URLSearchParams({ limit: String(session.pageSize) });
  for (const [name, value] of Object.entries(filter)) if (value) query.set(name, value);
  if (cursor) query.set('cursor', cursor);
  const page = await api<TaskPageJson>(`/api/tasks?${query}`);
  clockOffsetMs = Date.parse(page.serverNow) - Date.now();
  rows.clear();
  const lines = page.tasks.map(row);
  body.replaceChildren(...(lines.length > 0 ? lines : [el('tr', { className: 'empty' }, el('td', { text: cursor ? 'no more tasks' : 'no tasks match', attributes: { colspan: '8' } }))]));
  next = page.nextCursor;
  byId<HTMLButtonElement>('newer').disabled = earlier.length === 0;
  byId<HTMLButtonElement>('older').disabled = next === null;
  byId('page-info').textContent = `page ${earlier.length + 1}`;
  byId('problem').hidden = true; // what went wrong before (a bad filter, an outage) is over
  document.body.dataset.ready = 'true';
});

const reloadDetail = serial(async () => {
  const taskId = openTask;
  if (taskId === null) return detail.hide();
  const response = await fetch(`/api/tasks/${encodeURIComponent(taskId)}`, { credentials: 'same-origin' });
  if (response.status !== 404 && !response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  if (openTask === taskId) detail.show(taskId, response.status === 404 ? null : ((await response.json()) as TaskDetailJson));
});

function renderSummary(summary: SummaryJson): void {
  const chips = STATUSES.map((status) => {
    const chip = el('button', { className: `chip status-${status}`, data: { status }, attributes: { type: 'button' } }, `${status} `, el('strong', { text: String(summary.tasks[status as keyof SummaryJson['tasks']] ?? 0) }));
    chip.addEventListener('click', () => setFilter({ ...filter, status: filter.status === status ? '' : status }));
    if (filter.status === status) chip.classList.add('selected');
    return chip;
  });
  byId('summary').replaceChildren(
    ...chips,
    el('span', { className: 'count', text: `expired ${summary.expired} awaiting the reaper` }),
    el('span', { className: 'count', text: `tombstones ${summary.tombstones}` }),
  );
  const counts = (byStatus: Record<string, number | undefined>) =>
    STATUSES.filter((status) => byStatus[status]).map((status) => `${status} ${byStatus[status]}`).join(', ') || '-';
  byId('tools-body').replaceChildren(
    ...summary.tools.map((tool) => {
      const name = el('a', { text: tool.toolName, attributes: { href: '#' } });
      name.addEventListener('click', (event) => {
        event.preventDefault();
        setFilter({ ...filter, tool: tool.toolName });
      });
      return el('tr', {}, el('td', {}, name), el('td', { text: counts(tool.live) }), el('td', { text: counts(tool.settledLastHour) }), el('td', { text: counts(tool.settledLastDay) }));
    }),
  );
  showFeed(summary.feed);
}

function showFeed(state: FeedState | 'disconnected'): void {
  const badge = byId('feed');
  badge.textContent = FEED_TEXT[state] ?? state;
  badge.className = `feed feed-${state}`;
  document.body.dataset.feed = state;
}

const reloadSummary = serial(async () => renderSummary(await api<SummaryJson>('/api/summary')));

function refreshAll(): void {
  reloadSummary();
  reloadPage();
  reloadDetail();
}

function applyChanges(changes: TaskChangeJson[]): void {
  let reread = false;
  for (const change of changes) {
    const shown = rows.get(change.taskId);
    if (change.taskId === openTask) reloadDetail();
    if (!shown) {
      reread ||= cursor === null && change.change === 'created' && matches(change);
      continue;
    }
    if (change.status === null || change.change === 'expired') {
      shown.status.closest('tr')?.classList.add('gone');
      reread = true;
      continue;
    }
    const same = shown.line.status === change.status && shown.line.statusMessage === change.statusMessage;
    shown.line = { ...shown.line, status: change.status, statusMessage: change.statusMessage, lastUpdatedAt: change.at };
    shown.status.replaceChildren(badge(change.status));
    shown.updated.textContent = time(change.at);
    shown.updated.title = change.at;
    shown.message.textContent = change.statusMessage ?? '';
    shown.status.closest('tr')?.classList.add('changed');
    reread ||= same || !matches(shown.line);
  }
  if (reread) reloadPage();
}

function formField(name: (typeof FILTERS)[number]): HTMLInputElement | HTMLSelectElement {
  return filters.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
}

/** A live change is shown where the filter keeps it; `since` needs no check, a change's task never gets older. */
function matches(line: { status: string | null; toolName: string | null; owner: string | null }): boolean {
  return (!filter.status || line.status === filter.status) && (!filter.tool || line.toolName === filter.tool) && (!filter.owner || line.owner === filter.owner);
}

function setFilter(wanted: typeof filter): void {
  filter = wanted;
  earlier = [];
  cursor = null;
  for (const name of FILTERS) formField(name).value = filter[name];
  reloadPage();
  reloadSummary();
}

function openFromHash(): void {
  const match = /^#task=(.+)$/.exec(location.hash);
  openTask = match ? decodeURIComponent(match[1]!) : null;
  reloadDetail();
}

function connect(): void {
  const source = new EventSource('/api/events');
  source.onopen = refreshAll; // also after a reconnection: what happened meanwhile was missed
  source.onerror = () => showFeed('disconnected');
  source.addEventListener('changes', (event) => applyChanges(JSON.parse(event.data) as TaskChangeJson[]));
  source.addEventListener('summary', (event) => renderSummary(JSON.parse(event.data) as SummaryJson));
  source.addEventListener('feed', (event) => showFeed((JSON.parse(event.data) as { state: FeedState }).state));
  source.addEventListener('refresh', refreshAll);
}

async function start(): Promise<void> {
  session = await api<SessionJson>('/api/session');
  byId('where').textContent = `schema ${session.schema} · ${session.database}`;
  detail = detailView(byId('detail'), session.allowActions, {
    untilServer,
    async cancel(taskId) {
      const result = await api<{ status: string }>(`/api/tasks/${encodeURIComponent(taskId)}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken },
        body: '{}',
      });
      reloadDetail();
      return result.status === 'cancelled' ? 'cancelled' : `cancel requested; the task had already ended ${result.status}`;
    },
  });
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    setFilter(Object.fromEntries(FILTERS.map((name) => [name, formField(name).value.trim()])) as typeof filter);
  });
  filters.addEventListener('reset', (event) => {
    event.preventDefault();
    setFilter({ status: '', tool: '', owner: '', since: '' });
  });
  byId('older').addEventListener('click', () => {
    if (next === null) return;
    earlier.push(cursor);
    cursor = next;
    reloadPage();
  });
  byId('newer').addEventListener('click', () => {
    if (earlier.length === 0) return;
    cursor = earlier.pop()!;
    reloadPage();
  });
  window.addEventListener('hashchange', openFromHash);
  setInterval(() => {
    for (const shown of rows.values()) shown.ttl.textContent = ttlLeft(shown.line);
    detail.tick();
  }, 1000);
  openFromHash();
  connect();
}

start().catch((error: Error) => problem(error.message));
