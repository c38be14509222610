/** Starts the connector CLI as a real process (node + tsx loader, so SIGKILL hits the connector itself). */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const WORKSPACE = path.resolve(here, '../..');
export const CLI = path.join(WORKSPACE, 'src/messenger/cli.ts');

export interface ConnectorProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export function spawnConnector(command: string, env: Record<string, string>): ConnectorProcess {
  // Its environment is only what it is given, so the source condition is a flag: workspace packages
  // resolve to their sources, as in the test itself.
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', CLI, command], {
    cwd: WORKSPACE,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function runCli(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const p = spawnConnector(command, env);
  const code = await p.exited;
  return { code, output: p.output() };
}
