/**
 * vitest globalSetup shared by every workspace: when DATABASE_URL_PG is not set, one embedded
 * PostgreSQL serves the whole run (tests still take a database each through acquirePostgres).
 */
import { acquirePostgres } from './postgres.js';

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.DATABASE_URL_PG?.trim()) return async () => undefined;
  const db = await acquirePostgres({});
  const admin = new URL(db.url);
  admin.pathname = '/postgres';
  process.env.DATABASE_URL_PG = admin.toString();
  return async () => {
    await db.release();
  };
}
