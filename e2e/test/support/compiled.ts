/**
 * Running the compiled build as production runs it, for the tests of the build and of the SDK package:
 * plain `node` on a `dist/` file, with nothing inherited that could add a loader or a source condition.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { freePort, startServerProcess, type ServerProcess } from '@conduit/contracts/testing';
import { REPO_ROOT } from '../../suite/launch.js';

const running: ChildProcess[] = [];

/** The compiled file (relative to the repository), or a failure that says how to make it. */
export function compiled(file: string): string {
  const absolute = path.join(REPO_ROOT, file);
  if (!existsSync(absolute)) {
    throw new Error(
      `${file} is missing: this test runs the compiled build; run \`npm run build\` first ` +
        '(`npm run check` and `npm test` through turbo build before they test).',
    );
  }
  return absolute;
}

/** An environment with nothing inherited that could add a loader or a source condition. */
export function plainEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), LANG: 'C.UTF-8', ...extra };
}

/** Starts `node <workspace>/dist/main.js` and waits until `ready` says it serves. */
export async function startCompiled(
  workspace: string,
  env: Record<string, string>,
  ready: (url: string) => Promise<boolean>,
  port: number,
): Promise<ServerProcess> {
  const server = await startServerProcess({
    name: `node ${workspace}/dist/main.js`,
    command: process.execPath,
    args: [compiled(`${workspace}/dist/main.js`)],
    cwd: path.join(REPO_ROOT, workspace),
    env: plainEnv(env),
    port,
    ready,
    timeoutMs: 60_000,
  });
  running.push(server.child);
  return server;
}

/** Stops every server startCompiled started (SIGTERM) and waits for each to exit. */
export async function stopCompiled(): Promise<void> {
  const children = running.splice(0);
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** The compiled relay on a free port (APNs accepted, nothing sent), ready once /healthz answers 200. */
export async function startCompiledRelay(env: Record<string, string> & { DATA_PATH: string }): Promise<ServerProcess> {
  const port = await freePort();
  return startCompiled(
    'server-relay',
    {
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: 'https://relay.example.test',
      APNS_TOPIC: 'dev.conduit.compiled',
      APNS_MODE: 'accept',
      ...env,
    },
    async (url) => (await fetch(`${url}/healthz`)).status === 200,
    port,
  );
}
