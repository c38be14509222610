/**
 * Starts one server of the suite as a child process and waits until it answers. Used by the
 * one-command start (start.ts) and by every e2e test, so both run the servers the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
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
  /** Resolves with the exit code (null when killed by a signal) whenever the process ends. */
  exited: Promise<number | null>;
}

export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    readonly server: string,
  ) {
    super(`Port ${port} (the ${server}) is already in use by another program on 127.0.0.1.`);
    this.name = 'PortInUseError';
  }
}

/**
 * Fails when something already listens on the port. Without this, a foreign server answering the
 * readiness probe would pass for ours while our own process dies of EADDRINUSE behind it.
 */
export function assertPortFree(port: number, server: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(port, server) : error),
    );
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** The Node flag that resolves workspace packages to their TypeScript sources (their `development` export). */
const SOURCE_CONDITION = '--conditions=development';

/**
 * How a server's entry runs. Once `npm run build` has compiled it (`server-relay/src/main.ts` →
 * `server-relay/dist/main.js`), as production runs it: plain `node` on the JavaScript, no loader, no
 * condition, so its workspace packages resolve to their dist/ too (a `--conditions=development` in
 * NODE_OPTIONS, which the test runner sets for its own children, is taken out). Before a build, or with
 * CONDUIT_FROM_SOURCE=1, the TypeScript source through tsx. Either way Node itself runs the server
 * (not the tsx CLI, which runs a second process), so a SIGTERM reaches its own shutdown code.
 */
export function entryCommand(entry: string, env: NodeJS.ProcessEnv): { args: string[]; env: NodeJS.ProcessEnv } {
  const source = path.join(REPO_ROOT, entry);
  const compiled = path.join(REPO_ROOT, entry.replace(/(^|\/)src\//, '$1dist/').replace(/\.ts$/, '.js'));
  if (env.CONDUIT_FROM_SOURCE !== '1' && compiled !== source && existsSync(compiled)) {
    const nodeOptions = (env.NODE_OPTIONS ?? '')
      .split(/\s+/)
      .filter((option) => option && option !== SOURCE_CONDITION)
      .join(' ');
    return { args: [compiled], env: { ...env, NODE_OPTIONS: nodeOptions } };
  }
  return { args: [SOURCE_CONDITION, '--import', 'tsx', source], env };
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
  await assertPortFree(options.port, options.name);
  const command = entryCommand(options.entry, { ...process.env, ...options.env });
  const child = spawn(process.execPath, command.args, {
    cwd: REPO_ROOT,
    env: command.env,
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
      // Ready only while our own process is alive: the answer must be its.
      if (response.status < 500 && child.exitCode === null) break;
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
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
