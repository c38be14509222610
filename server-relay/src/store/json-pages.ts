import type { Provider } from '@conduit/prisma';
import type { RawStatement } from './last-seen-statements.js';

/**
 * One page of a table read as a single JSON text (SQLite `json_group_array`, PostgreSQL `json_agg`):
 * the credential index's boot-time load. Row by row, the driver and Prisma spent about two thirds of
 * the load's time building each row's object and converting its values; one text per page that
 * JSON.parse reads is about three times faster and leaves far less garbage. Keyset paging on the
 * primary key: each page is one index range scan however deep into the table.
 *
 * Each row comes back as an array of the `columns` values in order. DateTime columns come back as
 * text (`dateTimeMs` reads them), booleans as true/false or 1/0.
 */
export function jsonPageStatement(
  provider: Provider,
  table: string,
  columns: readonly string[],
  key: readonly [string] | readonly [string, string],
  after: readonly string[] | null,
  take: number,
): RawStatement {
  if (!Number.isSafeInteger(take) || take <= 0) throw new Error('page size must be a positive integer');
  const p = (n: number) => (provider === 'sqlite' ? '?' : `$${n}`);
  const quoted = columns.map((column) => `"${column}"`).join(', ');
  const order = key.map((column) => `"${column}"`).join(', ');
  let where = '';
  let params: string[] = [];
  if (after !== null && key.length === 1) {
    where = `WHERE "${key[0]}" > ${p(1)}`;
    params = [after[0] ?? ''];
  } else if (after !== null) {
    // Spelled out rather than a row value, so both databases use the primary key's index for it.
    where = `WHERE "${key[0]}" > ${p(1)} OR ("${key[0]}" = ${p(2)} AND "${key[1]}" > ${p(3)})`;
    params = [after[0] ?? '', after[0] ?? '', after[1] ?? ''];
  }
  const rows = `SELECT ${quoted} FROM "${table}" ${where} ORDER BY ${order} LIMIT ${take}`;
  const sql =
    provider === 'sqlite'
      ? `SELECT json_group_array(json_array(${quoted})) AS "page" FROM (${rows})`
      : `SELECT CAST(json_agg(json_build_array(${quoted}) ORDER BY ${order}) AS TEXT) AS "page" FROM (${rows}) AS "rows"`;
  return { sql, params };
}

/** The rows of a page (an empty page is NULL on PostgreSQL). */
export function readJsonPage(result: { page: unknown }[]): unknown[][] {
  const text = result[0]?.page;
  if (typeof text !== 'string') return [];
  const rows: unknown = JSON.parse(text);
  if (!Array.isArray(rows) || !rows.every(Array.isArray)) throw new Error('a page is not a JSON array of rows');
  return rows as unknown[][];
}

/**
 * A DateTime column's value in a JSON page, as ms since the epoch: SQLite holds the ISO text Prisma
 * wrote (with its `+00:00` offset); PostgreSQL's `timestamp(3)` without time zone holds UTC and
 * renders without an offset, so it is read as UTC. Null stays null.
 */
export function dateTimeMs(provider: Provider, value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') throw new Error('a DateTime column holds neither text nor a number');
  const ms = Date.parse(provider === 'postgres' && !/(Z|[+-]\d\d:?\d\d)$/.test(value) ? `${value}Z` : value);
  if (Number.isNaN(ms)) throw new Error('a DateTime column holds unreadable text');
  return ms;
}
