/**
 * The browser side of the dashboard, part one: the helpers that build elements and write the
 * CLI's formats. Compiled at build time with the DOM library (./tsconfig.json), for this
 * directory alone, and served as ES modules.
 *
 * Every value from the database reaches the page through `textContent` or an attribute set by
 * `setAttribute`/`dataset`, never through markup: {@link el} is the only way the script makes
 * elements, and it has no way to take HTML. The page's CSP also forbids assigning strings to
 * `innerHTML` (Trusted Types), so a slip would throw rather than render.
 */

type Child = Node | string | null | undefined | false;

export interface ElementOptions {
  className?: string;
  text?: string | null;
  title?: string;
  data?: Record<string, string>;
  attributes?: Record<string, string>;
}

/** An element with text, attributes and children: never markup. */
export function el<Tag extends keyof HTMLElementTagNameMap>(tag: Tag, options: ElementOptions = {}, ...children: Child[]): HTMLElementTagNameMap[Tag] {
  const element = document.createElement(tag);
  if (options.className) element.className = options.className;
  if (options.text !== undefined && options.text !== null) element.textContent = options.text;
  if (options.title) element.title = options.title;
  for (const [name, value] of Object.entries(options.data ?? {})) element.dataset[name] = value;
  for (const [name, value] of Object.entries(options.attributes ?? {})) element.setAttribute(name, value);
  for (const child of children) if (child) element.append(child);
  return element;
}

/** The page's element `#id`, of the type the page's markup gives it. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}

/** '350ms', '4.2s', '3m 05s', '2h 14m', '3d 4h', as the CLI writes durations. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1).replace(/\.0$/, '')}s`;
  const seconds = Math.floor(ms / 1000);
  const [days, hours, minutes] = [Math.floor(seconds / 86_400), Math.floor(seconds / 3600) % 24, Math.floor(seconds / 60) % 60];
  const pad = (n: number) => String(n).padStart(2, '0');
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${pad(minutes)}m`;
  return `${minutes}m ${pad(seconds % 60)}s`;
}

/** UTC to the second, '2025-06-01 12:00:04Z'; the full time goes in the element's title. */
export function time(iso: string | null): string {
  return iso === null ? '-' : iso.replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

/** null (no principal) and '' (an empty owner) look different, as in the CLI. */
export function owner(value: string | null): string {
  return value === null ? '-' : value === '' ? '""' : value;
}

export const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;

/** A status as a badge; its class only ever names one of the five statuses. */
export function badge(status: string): HTMLSpanElement {
  const known = (STATUSES as readonly string[]).includes(status);
  return el('span', { className: `status status-${known ? status : 'unknown'}`, text: status });
}

/** A JSON value as one shortened line of text. */
export function json(value: unknown, max = 300): string {
  const text = value === undefined ? '' : JSON.stringify(value);
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
