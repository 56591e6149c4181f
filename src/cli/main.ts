#!/usr/bin/env node
// The package's `bin`: see cli.ts.
import { runCli } from './cli.js';

process.exitCode = await runCli(process.argv.slice(2));
