import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { writeFileAtomic } from '../../credentials/atomic-write.js';

/**
 * Bytes written so a reader sees the whole file or none of it (credentials/atomic-write.ts: a private
 * temporary file, 0600 from its first byte, flushed, then renamed over the name). Rename replaces a
 * symlink planted at the name rather than writing through it.
 */
export async function writePrivateFile(file: string, bytes: Uint8Array): Promise<void> {
  await writeFileAtomic(file, bytes);
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
