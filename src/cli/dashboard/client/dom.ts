/**
 * The browser side of the dashboard, part one: the few DOM types the page's script uses (the
 * project compiles for Node, without the DOM library, so they are declared here, for these files
 * alone), and {@link domKit}, the helpers that build elements.
 *
 * Every value from the database reaches the page through `textContent` or an attribute set by
 * `setAttribute`/`dataset`, never through markup: {@link domKit}'s `el` is the only way the script
 * makes elements, and it has no way to take HTML. The page's CSP also forbids assigning strings to
 * `innerHTML` (Trusted Types), so a slip would throw rather than render.
 *
 * These functions are sent to the browser as their source text (see script.ts): they must not use
 * anything from outside themselves but their parameters and the browser's globals, and may import
 * types only.
 */

export interface DomEvent {
  preventDefault(): void;
  readonly target: DomElement | null;
}

export interface DomElement {
  textContent: string | null;
  className: string;
  hidden: boolean;
  disabled: boolean;
  value: string;
  title: string;
  readonly dataset: Record<string, string | undefined>;
  readonly classList: { add(name: string): void; remove(name: string): void; toggle(name: string, on?: boolean): void };
  append(...nodes: (DomElement | string)[]): void;
  replaceChildren(...nodes: (DomElement | string)[]): void;
  prepend(...nodes: (DomElement | string)[]): void;
  remove(): void;
  setAttribute(name: string, value: string): void;
  addEventListener(type: string, listener: (event: DomEvent) => void): void;
  querySelector(selector: string): DomElement | null;
  closest(selector: string): DomElement | null;
  readonly children: ArrayLike<DomElement>;
}

export interface DomDocument {
  getElementById(id: string): DomElement | null;
  createElement(tag: string): DomElement;
  readonly body: DomElement;
}

export interface DomEventSource {
  addEventListener(type: string, listener: (event: { data: string }) => void): void;
  onopen: (() => void) | null;
  onerror: (() => void) | null;
  readonly readyState: number;
  close(): void;
}

export interface DomLocation {
  hash: string;
}

type Child = DomElement | string | null | undefined | false;

export interface ElementOptions {
  className?: string;
  text?: string | null;
  title?: string;
  data?: Record<string, string>;
  attributes?: Record<string, string>;
}

export type DomKit = ReturnType<typeof domKit>;

declare const document: DomDocument;

export function domKit() {
  /** An element with text, attributes and children: never markup. */
  function el(tag: string, options: ElementOptions = {}, ...children: Child[]): DomElement {
    const element = document.createElement(tag);
    if (options.className) element.className = options.className;
    if (options.text !== undefined && options.text !== null) element.textContent = options.text;
    if (options.title) element.title = options.title;
    for (const [name, value] of Object.entries(options.data ?? {})) element.dataset[name] = value;
    for (const [name, value] of Object.entries(options.attributes ?? {})) element.setAttribute(name, value);
    for (const child of children) if (child) element.append(child);
    return element;
  }

  function byId(id: string): DomElement {
    const element = document.getElementById(id);
    if (!element) throw new Error(`the page has no #${id}`);
    return element;
  }

  /** '350ms', '4.2s', '3m 05s', '2h 14m', '3d 4h', as the CLI writes durations. */
  function duration(ms: number): string {
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
  function time(iso: string | null): string {
    return iso === null ? '-' : iso.replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
  }

  /** null (no principal) and '' (an empty owner) look different, as in the CLI. */
  function owner(value: string | null): string {
    return value === null ? '-' : value === '' ? '""' : value;
  }

  /** A status as a badge; its class only ever names one of the five statuses. */
  function badge(status: string): DomElement {
    const known = ['working', 'input_required', 'completed', 'failed', 'cancelled'].includes(status);
    return el('span', { className: `status status-${known ? status : 'unknown'}`, text: status });
  }

  function json(value: unknown, max = 300): string {
    const text = value === undefined ? '' : JSON.stringify(value);
    return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
  }

  return { el, byId, duration, time, owner, badge, json };
}
