import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { createDb, providerOf } from '@conduit/prisma';

/**
 * Whose database a DATA_PATH (SQLite) or DATABASE_URL names, found without creating or changing
 * anything, so the relay never adds its tables to another application's database and the operator
 * CLIs never create an empty one behind the operator's back:
 *
 * - `missing`: no file there (SQLite only);
 * - `empty`: a zero-byte file, or a database without a single table — nothing of anyone's to harm;
 * - `ours`: it holds the relay's migration table `_conduit_migrations` (every relay database has it
 *   from its first start, before any other table);
 * - `foreign`: anything else — a file that is not a SQLite database, or one with tables of its own.
 */
export type DatabaseState = 'missing' | 'empty' | 'ours' | 'foreign';

const MIGRATIONS_TABLE = '_conduit_migrations';
/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** The file path inside a `file:` URL (or a bare path). */
function sqliteFile(url: string): string {
  return path.resolve(url.startsWith('file:') ? url.slice('file:'.length) : url);
}

function fileHeader(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, header, 0, header.length, 0);
    return header.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

async function tablesOf(url: string): Promise<string[]> {
  const db = createDb(url);
  try {
    const rows =
      providerOf(url) === 'sqlite'
        ? await db.$queryRawUnsafe<{ name: string }[]>(`SELECT "name" FROM "sqlite_master" WHERE "type" = 'table'`)
        : await db.$queryRawUnsafe<{ name: string }[]>(
            `SELECT "table_name" AS "name" FROM "information_schema"."tables" WHERE "table_schema" = current_schema()`,
          );
    return rows.map((row) => row.name);
  } finally {
    await db.$disconnect();
  }
}

export async function databaseState(url: string): Promise<DatabaseState> {
  if (providerOf(url) === 'sqlite') {
    const file = sqliteFile(url);
    let size: number;
    try {
      const stat = statSync(file);
      if (!stat.isFile()) return 'foreign';
      size = stat.size;
    } catch {
      return 'missing';
    }
    if (size === 0) return 'empty';
    if (!fileHeader(file).equals(SQLITE_HEADER)) return 'foreign';
  }
  const tables = await tablesOf(url);
  if (tables.includes(MIGRATIONS_TABLE)) return 'ours';
  return tables.length === 0 ? 'empty' : 'foreign';
}

/** A database the relay must not touch; the message is one line and never holds a connection string. */
export class ForeignDatabaseError extends Error {}

/** What an operator is told about a SQLite file or a PostgreSQL database that is not the relay's. */
export function foreignDatabaseMessage(url: string): string {
  if (providerOf(url) !== 'sqlite') {
    return `DATABASE_URL names a database with tables of another application (no ${MIGRATIONS_TABLE} table); the relay leaves it alone.`;
  }
  return `${sqliteFile(url)} is not a relay database: it is not SQLite, or it holds another application's tables (no ${MIGRATIONS_TABLE} table). The relay will not add its tables to it.`;
}

/**
 * Refuses a foreign SQLite database before the relay creates its files or applies migrations. A
 * PostgreSQL database may be shared with other applications' tables, as operators set them up, so
 * it is not refused here (the CLIs still require the relay's own tables, see cli/storage-target.ts).
 */
export async function assertRelayMayUse(url: string): Promise<void> {
  if (providerOf(url) !== 'sqlite') return;
  if ((await databaseState(url)) === 'foreign') throw new ForeignDatabaseError(foreignDatabaseMessage(url));
}
