import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { providerOf } from '@conduit/prisma';

/** Files SQLite keeps beside the database: the write-ahead log, its shared-memory index, a rollback journal. */
const COMPANIONS = ['-wal', '-shm', '-journal'] as const;

/**
 * Makes the relay's SQLite files private before anything opens them: the database holds every
 * installation's device token and the hashes of every credential, and its -wal holds recent rows
 * verbatim, so nobody but the relay's user may read them.
 *
 * - The folder is created 0700 when the relay creates it. A folder the operator made (a mounted
 *   volume) keeps its mode: it may be shared on purpose, and the files themselves are private.
 * - The database file is created empty with 0600 before SQLite opens it. SQLite creates its -wal,
 *   -shm and -journal with the database file's own mode (whatever the umask), so they follow.
 * - Files an older relay created 0644 are narrowed to 0600 at every start.
 *
 * A no-op for PostgreSQL URLs and `:memory:`.
 */
export function secureSqliteFiles(databaseUrl: string): void {
  if (providerOf(databaseUrl) !== 'sqlite') return;
  const file = databaseUrl.startsWith('file:') ? databaseUrl.slice('file:'.length) : databaseUrl;
  if (file === ':memory:' || file === '') return;
  const resolved = path.resolve(file);
  const folder = path.dirname(resolved);
  if (!existsSync(folder)) {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    // mkdir's mode passes through the umask; the folder must end up exactly 0700.
    chmodSync(folder, 0o700);
  }
  // 'a': creates the file if missing and never truncates an existing database.
  closeSync(openSync(resolved, 'a', 0o600));
  for (const name of [resolved, ...COMPANIONS.map((suffix) => resolved + suffix)]) {
    if (existsSync(name)) chmodSync(name, 0o600);
  }
}
