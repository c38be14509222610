import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Replaces `path` with `contents` so a reader sees either the old file or the new one, never a torn
 * write: the data goes to a private temp file in the same directory (same filesystem, so rename is
 * atomic), is flushed, and is renamed over the target. The file is 0600 from its first byte, because
 * it holds a credential, and the parent is created 0700.
 */
export async function writeFileAtomic(path: string, contents: string | Uint8Array, mode = 0o600): Promise<void> {
  const directory = dirname(path);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const temp = join(directory, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await (typeof contents === 'string' ? handle.writeFile(contents, 'utf8') : handle.writeFile(contents));
      await handle.sync();
    } finally {
      await handle.close();
    }
    // The umask may have narrowed or (with an odd umask) not applied the mode; make it exact.
    await chmod(temp, mode);
    await rename(temp, path);
    await chmod(path, mode);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(directory);
}

/** Persists the rename itself (the directory entry), so a crash right after cannot bring back the old file. */
async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r').catch(() => null);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic.
  } finally {
    await handle.close();
  }
}
