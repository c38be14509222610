/** Writes the migrations for a change of schema.prisma (see cli.ts `new`). */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  derivePostgresSchema,
  migrationsDir,
  PRISMA_DIR,
  PROVIDERS,
  readSchema,
  schemaFile,
  type Provider,
} from './providers.js';
import { diffSchemas } from './schema-engine.js';

export const SNAPSHOT = 'schema.snapshot.prisma';

function snapshotPath(provider: Provider, root: string): string {
  return path.join(migrationsDir(provider, root), SNAPSHOT);
}

/** Writes the migrations for the change since the last snapshot. Returns the new migration folders. */
export async function createMigration(
  name: string,
  options: { postgresUrl: string; root?: string; now?: Date },
): Promise<string[]> {
  const root = options.root ?? PRISMA_DIR;
  const now = options.now ?? new Date();
  if (!/^[a-z0-9_]{1,60}$/.test(name)) throw new Error('migration name must be 1-60 of a-z, 0-9 and _');
  const postgres = derivePostgresSchema(readSchema('sqlite', root));
  writeFileSync(schemaFile('postgres', root), postgres);
  const created: string[] = [];
  const stamp = now
    .toISOString()
    .replace(/[-:TZ.]/g, '')
    .slice(0, 14);
  for (const provider of PROVIDERS) {
    const current = readSchema(provider, root);
    const previousFile = snapshotPath(provider, root);
    const previous = existsSync(previousFile) ? readFileSync(previousFile, 'utf8') : null;
    const sql = await diffSchemas(provider, previous, current, options.postgresUrl);
    if (!sql.trim()) continue;
    const folder = path.join(migrationsDir(provider, root), `${stamp}_${name}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'migration.sql'), sql);
    writeFileSync(previousFile, current);
    created.push(path.relative(root, folder));
  }
  return created;
}
