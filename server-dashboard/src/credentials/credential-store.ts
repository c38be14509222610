import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import { CREDENTIAL_FILE_NAME, credentialFile, type CredentialFile } from './credential-file.js';
import { withFileLock, type FileLockOptions } from './file-lock.js';
import { withSystemFlock } from './system-flock.js';

/**
 * Reads and writes a profile's `conduit-push.json`. Every change is a read-modify-write under a lock
 * shared with every other conduit process (the CLI, the service, a second service), so two writers
 * never lose each other's fields: e.g. a phone provisioning its E2E key while the CLI turns redaction on.
 */

/** The file exists but is not a credential file we can read; we report it and never overwrite it. */
export class CorruptCredentialsError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path} is unreadable (${reason}); fix or move it away, then pair again`);
    this.name = 'CorruptCredentialsError';
  }
}

export function credentialPath(home: string): string {
  return join(home, CREDENTIAL_FILE_NAME);
}

/** Our O_EXCL lock; a distinct name from the reference's flock file, which Python keeps on disk. */
export function credentialLockPath(home: string): string {
  return join(home, `.${CREDENTIAL_FILE_NAME}.wlock`);
}

/** The reference plugin's flock(2) file, also taken so a Python writer and we never interleave. */
export function referenceLockPath(home: string): string {
  return join(home, `.${CREDENTIAL_FILE_NAME}.lock`);
}

/** The parsed file, or null when there is none. Throws CorruptCredentialsError for anything else. */
export async function readCredentials(home: string): Promise<CredentialFile | null> {
  const path = credentialPath(home);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT') return null;
    throw error;
  }
  return parseCredentials(path, text);
}

export function parseCredentials(path: string, text: string): CredentialFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CorruptCredentialsError(path, 'not JSON');
  }
  const parsed = credentialFile.safeParse(value);
  if (!parsed.success) {
    // Name the field and the expected type only: the values may be secrets.
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the top level';
    throw new CorruptCredentialsError(path, `${where} has the wrong type`);
  }
  return parsed.data;
}

/** What a mutation returns: the new content, `null` to delete the file, or `unchanged` to leave it. */
export const unchanged = Symbol('unchanged');
export type Mutation<T> = (
  current: CredentialFile | null,
) =>
  | { next: CredentialFile | null | typeof unchanged; result: T }
  | Promise<{ next: CredentialFile | null | typeof unchanged; result: T }>;

/**
 * Applies `mutate` to the current file under the lock and writes its answer atomically (0600).
 * A corrupt file makes the whole update fail before `mutate` runs.
 */
export async function updateCredentials<T>(
  home: string,
  mutate: Mutation<T>,
  lockOptions?: FileLockOptions,
): Promise<T> {
  // The lock file lives beside the credential file, so the profile directory must exist first.
  await mkdir(home, { recursive: true, mode: 0o700 });
  const timeoutMs = lockOptions?.timeoutMs ?? 10_000;
  return withFileLock(
    credentialLockPath(home),
    () => withSystemFlock(referenceLockPath(home), () => mutateFile(home, mutate), timeoutMs),
    lockOptions,
  );
}

/** One read-modify-write; runs only while both locks are held. */
async function mutateFile<T>(home: string, mutate: Mutation<T>): Promise<T> {
  const current = await readCredentials(home);
  const { next, result } = await mutate(current);
  if (next === unchanged) return result;
  if (next === null) {
    await unlink(credentialPath(home)).catch((error: unknown) => {
      if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT')) throw error;
    });
  } else {
    // Compact JSON plus a newline, as the reference writes it.
    await writeFileAtomic(credentialPath(home), `${JSON.stringify(next)}\n`);
  }
  return result;
}
