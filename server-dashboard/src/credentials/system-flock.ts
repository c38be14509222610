import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { LockTimeoutError } from './file-lock.js';

/**
 * The reference plugin's lock: an exclusive flock(2) on `.conduit-push.json.lock`. Node cannot call
 * flock itself, so a util-linux `flock` child process takes it and holds it until we close its stdin
 * (or we die, which closes the pipe too, so a crash never leaves it held). Taking it as well as our own
 * lock means the Python plugin and this service can write one profile's file without losing updates.
 * Where no `flock` binary exists (macOS without util-linux) this layer is skipped.
 */
let available: Promise<boolean> | undefined;

/** Probes for the `flock` binary once, without blocking the event loop; later calls share the answer. */
export function systemFlockAvailable(): Promise<boolean> {
  available ??= new Promise<boolean>((resolve) => {
    const probe = spawn('flock', ['--version'], { stdio: 'ignore' });
    probe.once('error', () => resolve(false));
    probe.once('exit', (code) => resolve(code === 0));
  });
  return available;
}

export async function withSystemFlock<T>(lockPath: string, critical: () => Promise<T>, timeoutMs: number): Promise<T> {
  if (!(await systemFlockAvailable())) return critical();
  // Create it ourselves so it is 0600 rather than whatever flock(1) and the umask would make.
  await (await open(lockPath, 'a', 0o600)).close();
  const seconds = Math.max(0.001, timeoutMs / 1000).toFixed(3);
  const holder = spawn('flock', ['-x', '-w', seconds, lockPath, '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = new Promise<number | null>((resolve) => holder.once('exit', (code) => resolve(code)));
  const locked = await new Promise<boolean>((resolve) => {
    let seen = '';
    holder.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('locked')) resolve(true);
    });
    holder.once('exit', () => resolve(false));
    holder.once('error', () => resolve(false));
  });
  if (!locked) {
    holder.stdin.destroy();
    throw new LockTimeoutError(lockPath);
  }
  try {
    return await critical();
  } finally {
    holder.stdin.end();
    await exited;
  }
}
