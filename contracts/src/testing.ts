import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

/**
 * A TCP port free on 127.0.0.1 right now, for tests, benches and launchers that start real server
 * processes (the OS picks it; a tiny race with other binders remains, as with any such probe).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** A server process started by `startServerProcess`. */
export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr interleaved). */
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * Starts a server process listening on `port` and waits until `ready(url)` says it serves; fails with its
 * output if it exits first or is not ready within `timeoutMs` (then it is killed). For tests, benches and
 * probes that run the real servers.
 */
export async function startServerProcess(options: {
  /** What the error messages call it ("relay", "gateway"). */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  port: number;
  ready: (url: string) => Promise<boolean>;
  timeoutMs?: number;
  pollMs?: number;
}): Promise<ServerProcess> {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited with ${child.exitCode}:\n${output}`);
    if (await options.ready(url).catch(() => false)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 100));
  }
  return { url, child, output: () => output, exited };
}
