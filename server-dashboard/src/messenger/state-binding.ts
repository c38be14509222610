/**
 * Binds a state directory to one Relay account (PROTOCOL.md §6). The directory and its database
 * carry the normalised API origin and a one-way fingerprint of the Agent Token — never the token.
 * A changed token or origin fails here, before any pending work is requeued or a snapshot read,
 * because replaying account A's inbox as account B would answer the wrong people.
 *
 * Path hardening: every component from `/` is checked with lstat and refused when it is a symlink;
 * missing components are created 0700; the final directory is opened with O_DIRECTORY|O_NOFOLLOW
 * and forced to 0700 through its descriptor, and must belong to this user. Node has no `openat`,
 * so the walk checks pathnames rather than pinned descriptors: a component swapped between the
 * check and the open is caught by re-asserting the directory's (dev, inode) identity afterwards and
 * on every `assertBound()`, not prevented. SQLite gets the pathname (better-sqlite3 cannot adopt a
 * descriptor; `/proc/self/fd/N` would break its -wal/-shm sidecar names), so the database file is
 * pre-opened with O_NOFOLLOW and its inode compared with what SQLite opened.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export class RelayStateBindingError extends Error {
  override name = 'RelayStateBindingError';
}

export const BINDING_FILE = '.relay-account.json';
export const BINDING_SCHEMA = 'relay-hermes-state-account/v1';

export interface AccountBinding {
  account_fingerprint: string;
  api_origin: string;
  schema: typeof BINDING_SCHEMA;
  token_fingerprint: string;
}

/** `sha256:` + hex(sha256("relay-hermes-token-v1\0" + token)). */
export function tokenFingerprint(token: string): string {
  const h = createHash('sha256');
  h.update(Buffer.from('relay-hermes-token-v1\0', 'utf8'));
  h.update(Buffer.from(token, 'utf8'));
  return `sha256:${h.digest('hex')}`;
}

/** `sha256:` + hex(sha256("relay-hermes-account-v1\0" + compact sorted JSON of origin and token fingerprint)). */
export function accountFingerprint(apiOrigin: string, tokenFp: string): string {
  const canonical = JSON.stringify({ api_origin: apiOrigin, token_fingerprint: tokenFp });
  const h = createHash('sha256');
  h.update(Buffer.from('relay-hermes-account-v1\0', 'utf8'));
  h.update(Buffer.from(canonical, 'utf8'));
  return `sha256:${h.digest('hex')}`;
}

export function expectedBinding(apiOrigin: string, token: string): AccountBinding {
  const tokenFp = tokenFingerprint(token);
  return {
    account_fingerprint: accountFingerprint(apiOrigin, tokenFp),
    api_origin: apiOrigin,
    schema: BINDING_SCHEMA,
    token_fingerprint: tokenFp,
  };
}

export function sameText(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

export function bindingsEqual(a: AccountBinding, b: AccountBinding): boolean {
  // Evaluate every comparison (no short-circuit) so timing does not say which field differed.
  const results = [
    sameText(a.account_fingerprint, b.account_fingerprint),
    sameText(a.api_origin, b.api_origin),
    sameText(a.token_fingerprint, b.token_fingerprint),
    sameText(a.schema, b.schema),
  ];
  return results.every(Boolean);
}

export const MISMATCH_MESSAGE =
  'the Relay state directory is bound to a different API origin or Agent Token; use a separate RELAY_STATE_DIR';

export interface DirIdentity {
  dev: number;
  ino: number;
}

function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

/**
 * Walks `dir` from the root, refusing symlinked components, creating missing ones 0700, and forces
 * the final directory to 0700. Returns the directory's identity for later re-checks.
 */
export function secureStateDirectory(dir: string): DirIdentity {
  const absolute = path.resolve(dir);
  const parts = absolute.split(path.sep).filter((p) => p !== '');
  let current = path.parse(absolute).root;
  for (const part of parts) {
    current = path.join(current, part);
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(current);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (st === undefined) {
      fs.mkdirSync(current, { mode: 0o700 });
      st = fs.lstatSync(current);
    }
    if (st.isSymbolicLink()) {
      throw new RelayStateBindingError(`refusing a symlinked path component in RELAY_STATE_DIR: ${current}`);
    }
    if (!st.isDirectory()) throw new RelayStateBindingError(`not a directory in RELAY_STATE_DIR: ${current}`);
  }
  const fd = fs.openSync(absolute, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  try {
    const st = fs.fstatSync(fd);
    const uid = currentUid();
    if (uid !== null && st.uid !== uid) {
      throw new RelayStateBindingError('RELAY_STATE_DIR belongs to another user');
    }
    // Forced even when the directory already existed: the inbox holds people's messages.
    fs.fchmodSync(fd, 0o700);
    return { dev: st.dev, ino: st.ino };
  } finally {
    fs.closeSync(fd);
  }
}

export function assertDirectoryIdentity(dir: string, identity: DirIdentity): void {
  const st = fs.lstatSync(dir);
  if (st.isSymbolicLink() || !st.isDirectory() || st.dev !== identity.dev || st.ino !== identity.ino) {
    throw new RelayStateBindingError('RELAY_STATE_DIR was replaced while in use');
  }
}

export function readBindingFile(file: string): AccountBinding | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new RelayStateBindingError(`${BINDING_FILE} is a symlink`);
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new RelayStateBindingError(`${BINDING_FILE} is not a regular file`);
    const parsed: unknown = JSON.parse(fs.readFileSync(fd, 'utf8'));
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      typeof (parsed as Record<string, unknown>)['account_fingerprint'] !== 'string' ||
      typeof (parsed as Record<string, unknown>)['api_origin'] !== 'string' ||
      typeof (parsed as Record<string, unknown>)['token_fingerprint'] !== 'string' ||
      (parsed as Record<string, unknown>)['schema'] !== BINDING_SCHEMA
    ) {
      throw new RelayStateBindingError(`${BINDING_FILE} is not a valid account binding`);
    }
    return parsed as AccountBinding;
  } catch (err) {
    if (err instanceof SyntaxError) throw new RelayStateBindingError(`${BINDING_FILE} is not valid JSON`);
    throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/** The binding file, indent 2, keys sorted, trailing newline; O_EXCL so a racing writer loses. */
function writeBindingFile(file: string, binding: AccountBinding): void {
  const text = `${JSON.stringify(binding, Object.keys(binding).sort(), 2)}\n`;
  const fd = fs.openSync(
    file,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export type BindingFileState = 'created' | 'matched';

/**
 * Checks (or, for a fresh directory, writes) the binding file. `databaseHasTables` says whether an
 * existing inbox predates the binding, which is refused rather than adopted.
 */
export function bindStateDirectory(
  dir: string,
  expected: AccountBinding,
  databaseHasTables: boolean,
): BindingFileState {
  const file = path.join(dir, BINDING_FILE);
  const found = readBindingFile(file);
  if (found === null) {
    if (databaseHasTables) {
      throw new RelayStateBindingError(
        'the Relay inbox predates account binding; move it aside only after accounting for its pending work',
      );
    }
    writeBindingFile(file, expected);
    return 'created';
  }
  if (!bindingsEqual(found, expected)) throw new RelayStateBindingError(MISMATCH_MESSAGE);
  return 'matched';
}
