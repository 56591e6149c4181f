/** What the dashboard's tests share: the system's Chromium, a dashboard started in-process, a page open on it. */
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll } from 'vitest';
import { startCli, type RunningCli } from '../package/cli-support.js';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((path) => existsSync(path));
if (!CHROMIUM) console.warn('\n!!! test/dashboard: no Chromium found (apt-get install chromium): the dashboard browser tests are SKIPPED !!!\n');

export interface StartedDashboard {
  /** The URL it printed, token included. */
  url: string;
  origin: string;
  token: string;
  cli: RunningCli;
}

/**
 * Registers an afterAll that stops every dashboard it started, and returns how to start one:
 * `mcp-task-store dashboard --schema <schema> …flags`, once it has printed its URL.
 */
export function useDashboards(
  database: { readonly connectionString: string },
  schema: string,
): ((...flags: string[]) => Promise<StartedDashboard>) & { stopAll(): Promise<void> } {
  const running: RunningCli[] = [];
  const stopAll = async () => void (await Promise.all(running.splice(0).map((cli) => cli.stop())));
  afterAll(stopAll);
  const start = async (...flags: string[]) => {
    const started = await startDashboard(database.connectionString, schema, ...flags);
    running.push(started.cli);
    return started;
  };
  return Object.assign(start, { stopAll });
}

async function startDashboard(connectionString: string, schema: string, ...flags: string[]): Promise<StartedDashboard> {
  const cli = startCli(['dashboard', '--schema', schema, ...flags], { DATABASE_URL: connectionString });
  await cli.waitFor('out', /^dashboard: /);
  const url = /^dashboard: (\S+)/.exec(cli.out.find((line) => line.startsWith('dashboard: '))!)![1]!;
  return { url, origin: new URL(url).origin, token: new URL(url).searchParams.get('token')!, cli };
}

export interface DashboardPage extends Page {
  /** Messages of the dialogs the page opened (each dismissed): none, unless a payload ran. */
  readonly dialogs: string[];
  /** Errors the page reported: uncaught exceptions, and console errors such as CSP refusals. */
  readonly errors: string[];
}

/** A page that has the dashboard open and has drawn its first list. */
export async function openDashboardPage(browser: Browser, url: string): Promise<DashboardPage> {
  const page = Object.assign(await browser.newPage(), { dialogs: [] as string[], errors: [] as string[] });
  page.on('dialog', (dialog) => {
    page.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('pageerror', (error) => page.errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') page.errors.push(message.text());
  });
  page.on('response', (response) => {
    if (response.status() >= 400) page.errors.push(`${response.status()} ${new URL(response.url()).pathname}`);
  });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}
