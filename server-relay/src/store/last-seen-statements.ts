import type { Provider } from '@conduit/prisma';

/** One gateway's last-seen time, as the deferred flush writes it. */
export interface LastSeen {
  installationId: string;
  gatewayId: string;
  lastEventAtMs: number;
}

export interface RawStatement {
  sql: string;
  params: string[];
}

/**
 * Rows per statement: small enough that one statement holds the event loop for a few milliseconds
 * at most (better-sqlite3 runs synchronously; about 10 µs a row here), and 3 parameters a row stay
 * far below SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
 */
export const LAST_SEEN_ROWS_PER_STATEMENT = 250;

/**
 * A DateTime column value as Prisma itself writes it, so rows written here read back through the
 * Prisma client unchanged: on SQLite the adapter stores ISO-8601 text with a `+00:00` offset; on
 * PostgreSQL the columns are `timestamp(3)` without time zone holding UTC, so the UTC wall time is
 * sent and cast in the statement.
 */
export function dateTimeParam(provider: Provider, ms: number): string {
  const iso = new Date(ms).toISOString();
  return provider === 'sqlite' ? iso.replace('Z', '+00:00') : iso.slice(0, -1);
}

/**
 * One UPDATE … FROM (VALUES …) per chunk of gateways instead of one statement per gateway: a relay
 * with 10,000 busy gateways flushes in 40 statements, not 10,000. A gateway revoked since its event
 * simply matches no row, and a time older than the stored one changes nothing. Both databases accept
 * this form (SQLite since 3.33).
 */
export function lastSeenStatements(provider: Provider, rows: LastSeen[]): RawStatement[] {
  const statements: RawStatement[] = [];
  for (let start = 0; start < rows.length; start += LAST_SEEN_ROWS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + LAST_SEEN_ROWS_PER_STATEMENT);
    const params: string[] = [];
    const tuples = chunk.map((row) => {
      params.push(row.installationId, row.gatewayId, dateTimeParam(provider, row.lastEventAtMs));
      if (provider === 'sqlite') return '(?, ?, ?)';
      const n = params.length;
      return `($${n - 2}, $${n - 1}, $${n}::timestamp(3))`;
    });
    statements.push({
      sql:
        `WITH "seen" ("installationId", "id", "lastEventAt") AS (VALUES ${tuples.join(', ')}) ` +
        `UPDATE "Gateway" SET "lastEventAt" = "seen"."lastEventAt" FROM "seen" ` +
        `WHERE "Gateway"."installationId" = "seen"."installationId" AND "Gateway"."id" = "seen"."id" ` +
        // Never backwards: replicas flush on their own timers, and one holding an older time for a
        // gateway may flush after one holding a newer time; the later event wins, not the later flush.
        // (SQLite compares the ISO texts Prisma writes, which sort as the times do.)
        `AND ("Gateway"."lastEventAt" IS NULL OR "Gateway"."lastEventAt" < "seen"."lastEventAt")`,
      params,
    });
  }
  return statements;
}
