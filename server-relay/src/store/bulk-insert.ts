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

/** How many distinct DateTime conversions an import keeps (cleared when full; a bound on memory). */
const DATETIME_CACHE_ENTRIES = 4_096;

/**
 * DateTime values as the columns hold them (what Prisma itself writes, see dateTimeParam), replaced in
 * the rows themselves (they are the caller's to give away; a copy per row was a tenth of an import's
 * time in garbage collection). Imported rows share many timestamps (the import's own time, a record's
 * creation as its pairing time), so conversions are cached.
 */
function encodeDateTimes(provider: Provider, kinds: readonly ColumnKind[], rows: BulkRow[]): void {
  const columns = kinds.flatMap((kind, index) => (kind === 'datetime' ? [index] : []));
  const cache = new Map<number, string>();
  for (const row of rows) {
    const values = row as (string | number | boolean | null)[];
    for (const index of columns) {
      const value = values[index];
      if (typeof value !== 'number') continue;
      let text = cache.get(value);
      if (text === undefined) {
        if (cache.size >= DATETIME_CACHE_ENTRIES) cache.clear();
        text = dateTimeParam(provider, value);
        cache.set(value, text);
      }
      values[index] = text;
    }
  }
}

/**
 * Inserts `rows` into `table` in batches of BULK_ROWS_PER_STATEMENT through `db` (pass a transaction
 * client to make them one transaction). DateTime values (ms since the epoch) are converted in the rows
 * themselves, so the caller hands the rows over. Returns how many rows were inserted; the others had
 * a primary key already in the table.
 */
export async function bulkInsert(
  db: Pick<Db, '$executeRawUnsafe'>,
  provider: Provider,
  table: BulkTable,
  rows: BulkRow[],
): Promise<number> {
  const sql = bulkInsertSql(provider, table);
  encodeDateTimes(
    provider,
    table.columns.map(([, kind]) => kind),
    rows,
  );
  let inserted = 0;
  for (let start = 0; start < rows.length; start += BULK_ROWS_PER_STATEMENT) {
    inserted += await db.$executeRawUnsafe(sql, JSON.stringify(rows.slice(start, start + BULK_ROWS_PER_STATEMENT)));
  }
  return inserted;
}
