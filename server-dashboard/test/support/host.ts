import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildHost, type Host, type HostDeps } from '../../src/app.js';
import { writeRuntimeFile } from '../../src/bridge/runtime-file.js';
import type { HostConfig } from '../../src/config.js';

export const BRIDGE = fileURLToPath(new URL('../../bin/conduit-hook.mjs', import.meta.url));

/** A listening host service with its runtime file written, as `npm run host` leaves it. */
export async function startHost(config: HostConfig, deps: Partial<HostDeps> = {}): Promise<Host & { url: string }> {
  const host = await buildHost(config, deps);
  const url = await host.app.listen({ host: '127.0.0.1', port: 0 });
  await writeRuntimeFile(config.stateDir, { url, token: host.hookToken, pid: process.pid });
  return { ...host, url };
}

/** Runs the hook bridge as Hermes does: a new node process, the payload on stdin. */
export function runBridge(
  stateDir: string,
  event: string,
  stdin: string,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BRIDGE, '--state', stateDir, event], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
    child.stdin.end(stdin);
  });
}

export function stateDirOf(root: string): string {
  return path.join(root, 'conduit-host');
}
