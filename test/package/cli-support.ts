/** Running the `mcp-task-store` CLI in-process, from source, with its output captured. */
import { runCli } from '../../src/cli/cli.js';
import type { CliIo } from '../../src/cli/command.js';

export interface CliResult {
  code: number;
  out: string[];
  err: string[];
}

export interface RunningCli {
  /** stdout and stderr so far, one entry per write. */
  readonly out: string[];
  readonly err: string[];
  /** Resolves once a line on `stream` matches. */
  waitFor(stream: 'out' | 'err', pattern: RegExp): Promise<void>;
  /** As SIGINT would: the command's onStop callback. Resolves to the result. */
  stop(): Promise<CliResult>;
  readonly done: Promise<CliResult>;
}

/** Starts the command; `interactive` says whether stdout is a terminal. */
export function startCli(args: string[], env: NodeJS.ProcessEnv, options: { interactive?: boolean } = {}): RunningCli {
  const out: string[] = [];
  const err: string[] = [];
  const waiters: { stream: 'out' | 'err'; pattern: RegExp; resolve: () => void }[] = [];
  const stops = new Set<() => void>();
  const write = (stream: 'out' | 'err', text: string) => {
    (stream === 'out' ? out : err).push(text);
    for (const waiter of [...waiters]) {
      if (waiter.stream === stream && waiter.pattern.test(text)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  const io: CliIo = {
    out: (text) => write('out', text),
    err: (text) => write('err', text),
    interactive: options.interactive ?? false,
    onStop(stop) {
      stops.add(stop);
      return () => stops.delete(stop);
    },
  };
  const done = runCli(args, env, io).then((code) => ({ code, out, err }));
  return {
    out,
    err,
    done,
    waitFor(stream, pattern) {
      if ((stream === 'out' ? out : err).some((text) => pattern.test(text))) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ stream, pattern, resolve }));
    },
    stop() {
      for (const stop of stops) stop();
      return done;
    },
  };
}

export function cli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return startCli(args, env).done;
}

/** The header line for `url`: the URL without its password. */
export function databaseLine(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return `database ${parsed}`;
}
