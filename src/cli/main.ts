#!/usr/bin/env node
// The package's `bin`, mcp-task-store: see cli.ts.
import { runCli } from './cli.js';

process.exitCode = await runCli(process.argv.slice(2), process.env, {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  interactive: process.stdout.isTTY === true,
  onStop(stop) {
    process.once('SIGINT', stop).once('SIGTERM', stop);
    return () => process.off('SIGINT', stop).off('SIGTERM', stop);
  },
});
