#!/usr/bin/env node
/**
 * The `conduit` command (this workspace's package.json "bin"): the compiled CLI, dist/cli/main.js,
 * run by plain node. This committed file is what npm links at install time, when `npm run build`
 * has not made dist/ yet (npm links no command whose file is missing).
 */
/* global process, URL */
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('conduit: the CLI is not built; run `npm run build` in the repository first\n');
  process.exit(1);
}
await import(entry.href);
