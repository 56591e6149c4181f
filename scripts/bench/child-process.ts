/**
 * A benchmark part that runs in a process of its own (pg-boss 12 needs Node 22; the memory
 * benchmark needs a fresh heap), driven by JSON requests, one a line on its stdin, and answering
 * with one `@@bench {json}` line on its stdout per request. Anything else the child prints (npm's
 * notices, warnings) passes through to stderr.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const REPLY_PREFIX = '@@bench ';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BenchChild {
  request<T>(message: object): Promise<T>;
  /** Asks the child to exit and waits for it. */
  close(): Promise<void>;
}

/** How to start a TypeScript script: under this Node, or under Node 22 from the `node` npm package. */
export type NodeLine = 'current' | 'node22';

export function startBenchChild(script: string, options: { node: NodeLine; nodeFlags?: string[] }): BenchChild {
  const nodeArgs = [...(options.nodeFlags ?? []), '--import', 'tsx', script];
  const child =
    options.node === 'current'
      ? spawn(process.execPath, nodeArgs, { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
      : spawn('npx', ['-y', '-p', 'node@22', '--', 'node', ...nodeArgs], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  return wrap(child, script);
}

function wrap(child: ChildProcess, script: string): BenchChild {
  const waiting: { resolve: (value: unknown) => void; reject: (error: Error) => void }[] = [];
  let exited: Error | null = null;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = new Error(`${script} exited (${signal ?? `code ${code}`})`);
      for (const pending of waiting.splice(0)) pending.reject(exited);
      resolve();
    });
  });
  child.once('error', (error) => {
    exited = error;
    for (const pending of waiting.splice(0)) pending.reject(error);
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith(REPLY_PREFIX)) return void process.stderr.write(`${line}\n`);
    const reply = JSON.parse(line.slice(REPLY_PREFIX.length)) as { error?: string };
    const pending = waiting.shift();
    if (!pending) return;
    if (reply.error !== undefined) pending.reject(new Error(`${script}: ${reply.error}`));
    else pending.resolve(reply);
  });
  return {
    request<T>(message: object): Promise<T> {
      if (exited) return Promise.reject(exited);
      return new Promise<T>((resolve, reject) => {
        waiting.push({ resolve: resolve as (value: unknown) => void, reject });
        child.stdin!.write(`${JSON.stringify(message)}\n`);
      });
    },
    async close(): Promise<void> {
      if (!exited) child.stdin!.end();
      await exit;
    },
  };
}

/**
 * The child's side: answers each request line with `handle`'s result, one at a time, and exits
 * when its stdin closes. A failed request is answered with its error, and the child goes on.
 */
export function serveBenchRequests(handle: (message: Record<string, unknown>) => Promise<object>): void {
  const reply = (value: object) => process.stdout.write(`${REPLY_PREFIX}${JSON.stringify(value)}\n`);
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    queue = queue.then(async () => {
      try {
        reply(await handle(JSON.parse(line) as Record<string, unknown>));
      } catch (error) {
        reply({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      }
    });
  });
  lines.on('close', () => void queue.then(() => handle({ op: 'close' })).then(() => process.exit(0)));
}
