import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Bytes written so a reader sees the whole file or none of it: a private temporary file (0600 from its
 * first byte) in the same folder, flushed, then renamed over the name. Rename replaces a symlink
 * planted at the name rather than writing through it. (credentials/atomic-write.ts does the same for
 * text; this one takes bytes.)
 */
export async function writePrivateFile(file: string, bytes: Uint8Array): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(temp, 0o600);
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * A file's bytes, or null when it is missing — or is a symlink: these folders hold only what this
 * service wrote, so a link found there was planted and is never followed.
 */
export async function readPrivateFile(file: string): Promise<Buffer | null> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'EMLINK') return null;
    throw error;
  }
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
