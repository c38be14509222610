import type { Db, Provider } from '@conduit/prisma';
import { dateTimeParam } from './last-seen-statements.js';

/** How a column's value travels: as text, as a boolean, or as a DateTime (ms since the epoch). */
export type ColumnKind = 'text' | 'boolean' | 'datetime';

export interface BulkTable {
  name: string;
  columns: readonly (readonly [name: string, kind: ColumnKind])[];
}

/** A row: one value per column, in the table's column order; null for SQL NULL. */
export type BulkRow = readonly (string | number | boolean | null)[];

/**
 * Rows per statement. The rows travel as one JSON array parameter, so the statement has a single
 * bound parameter whatever its size: Prisma's per-parameter cost (which made `createMany` take half
 * a minute for 50,000 installations) disappears, and SQLite's and PostgreSQL's parameter limits never
 * apply. 5,000 rows of an installation are about 2.5 MB of JSON.
 */
export const BULK_ROWS_PER_STATEMENT = 5_000;

const PG_TYPE: Record<ColumnKind, string> = { text: 'text', boolean: 'boolean', datetime: 'timestamp(3)' };

/**
 * The INSERT for one batch: the database unpacks the JSON array itself (SQLite's json_each, PostgreSQL's
 * jsonb_array_elements) and casts each element to its column. A row whose primary key is already taken
 * is left alone (ON CONFLICT DO NOTHING), so the caller can count it instead of losing the whole import.
 * PostgreSQL gets jsonb, not json: `->>` on json re-parses the element's text for every column, which
 * made 50,000 installations take four seconds instead of under one.
 */
export function bulkInsertSql(provider: Provider, table: BulkTable): string {
  const columns = table.columns.map(([name]) => `"${name}"`).join(', ');
  if (provider === 'sqlite') {
    const values = table.columns.map((_column, index) => `json_extract("value", '$[${index}]')`).join(', ');
    // SQLite needs the WHERE before an upsert clause on INSERT … SELECT (it would read ON as a join's).
    return (
      `INSERT INTO "${table.name}" (${columns}) SELECT ${values} FROM json_each(?) WHERE true ` +
      `ON CONFLICT DO NOTHING`
    );
  }
  const values = table.columns.map(([, kind], index) => `("value"->>${index})::${PG_TYPE[kind]}`).join(', ');
  return (
    `INSERT INTO "${table.name}" (${columns}) SELECT ${values} FROM jsonb_array_elements($1::jsonb) AS "row"("value") ` +
    `ON CONFLICT DO NOTHING`
  );
}

/** A DateTime as the column holds it (what Prisma itself writes, see dateTimeParam). */
function encode(provider: Provider, kind: ColumnKind, value: BulkRow[number]): BulkRow[number] {
  if (value === null) return null;
  if (kind === 'datetime') return dateTimeParam(provider, value as number);
  return value;
}

/**
 * Inserts `rows` into `table` in batches of BULK_ROWS_PER_STATEMENT through `db` (pass a transaction
 * client to make them one transaction). Returns how many rows were inserted; the others had a
 * primary key already in the table.
 */
export async function bulkInsert(
  db: Pick<Db, '$executeRawUnsafe'>,
  provider: Provider,
  table: BulkTable,
  rows: readonly BulkRow[],
): Promise<number> {
  const sql = bulkInsertSql(provider, table);
  const kinds = table.columns.map(([, kind]) => kind);
  let inserted = 0;
  for (let start = 0; start < rows.length; start += BULK_ROWS_PER_STATEMENT) {
    const batch = rows
      .slice(start, start + BULK_ROWS_PER_STATEMENT)
      .map((row) => row.map((value, index) => encode(provider, kinds[index] ?? 'text', value)));
    inserted += await db.$executeRawUnsafe(sql, JSON.stringify(batch));
  }
  return inserted;
}
