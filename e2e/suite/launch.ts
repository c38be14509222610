/**
 * Starts one server of the suite as a child process and waits until it answers. Used by the
 * one-command start (start.ts) and by every e2e test, so both run the servers the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Launched {
  name: string;
  url: string;
  child: ChildProcess;
  /** Everything the child printed, for failure messages. */
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export async function launch(options: {
  name: string;
  /** Entry file relative to the repository root. */
  entry: string;
  port: number;
  env: Record<string, string>;
  /** A path that answers 2xx/4xx once the server is ready. */
  readyPath: string;
  timeoutMs?: number;
}): Promise<Launched> {
  // Node itself with tsx as a loader (not the tsx CLI, which runs a second process): signals reach the
  // server directly, so a SIGTERM is handled by its own shutdown code.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, options.entry)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${options.port}`;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited with ${child.exitCode}:\n${output}`);
    try {
      const response = await fetch(url + options.readyPath);
      if (response.status < 500) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not answer within the deadline:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    name: options.name,
    url,
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
