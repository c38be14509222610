/**
 * One Prisma client type for both stores. The SQLite and PostgreSQL clients are generated from the
 * same models (schema.postgres.prisma is derived from schema.prisma), so their model APIs are the same;
 * the store code is written against `Db` and never sees which database is underneath.
 */
import { createRequire } from 'node:module';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaClient as SqliteClient } from './generated/sqlite/client.js';
import { PrismaClient as PostgresClient } from './generated/postgres/client.js';
import { providerOf, sqlitePath } from './migrate.js';

export type Db = SqliteClient;
export type { Provider } from './providers.js';

/**
 * `errorFormat: 'minimal'`: otherwise every query captures a stack trace up front to point a
 * possible error at the calling line, which cost the relay a fifth of its CPU per request.
 */
export function createDb(url: string): Db {
  if (providerOf(url) === 'postgres') {
    // Required only for a PostgreSQL URL (its CommonJS build, so createDb stays synchronous): `pg`
    // costs a process on SQLite a fifth of a second of its start.
    const { PrismaPg } = createRequire(import.meta.url)('@prisma/adapter-pg') as typeof import('@prisma/adapter-pg');
    const client = new PostgresClient({ adapter: new PrismaPg({ connectionString: url }), errorFormat: 'minimal' });
    // Same models, same delegates: the PostgreSQL client is used through the shared type.
    return client as unknown as Db;
  }
  return new SqliteClient({
    adapter: new PrismaBetterSqlite3({ url: `file:${sqlitePath(url)}` }),
    errorFormat: 'minimal',
  });
}
