import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startServerProcess, type ServerProcess } from '@conduit/contracts/testing';

export const RELAY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(RELAY_DIR, 'src/main.ts');

/** A relay started by `startRelayProcess`. */
export type RelayProcess = ServerProcess;

/**
 * The relay as operators run it: one node process (tsx as a loader, not a wrapper process, so a
 * SIGKILL hits the server itself), configured only by the environment.
 */
export async function startRelayProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
  /** Node flags for the relay process (e.g. --cpu-prof, which NODE_OPTIONS does not accept). */
  nodeFlags: string[] = [],
): Promise<RelayProcess> {
  const port = await freePort();
  return startServerProcess({
    name: 'relay',
    command: process.execPath,
    args: [...nodeFlags, '--import', 'tsx', MAIN],
    cwd: RELAY_DIR,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), ...env },
    port,
    ready: async (url) => (await fetch(`${url}/healthz`)).ok,
    timeoutMs,
  });
}

/** Runs a relay command to completion without blocking the test's event loop. */
export function runRelayAsync(
  args: string[],
  env: Record<string, string>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
      cwd: RELAY_DIR,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs a relay command to completion (boot failures, CLIs). */
export function runRelay(
  args: string[],
  env: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: RELAY_DIR,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
