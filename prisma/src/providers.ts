import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type Provider = 'sqlite' | 'postgres';
export const PROVIDERS: readonly Provider[] = ['sqlite', 'postgres'];

/**
 * The prisma/ folder of this checkout (its migrations and schemas), found through the package's name
 * rather than this module's own path: the relay's production entry is a bundle, where this module's
 * import.meta.url is the bundle's.
 */
export const PRISMA_DIR = path.dirname(createRequire(import.meta.url).resolve('@conduit/prisma/package.json'));

export function migrationsDir(provider: Provider, root = PRISMA_DIR): string {
  return path.join(root, 'migrations', provider);
}

export function schemaFile(provider: Provider, root = PRISMA_DIR): string {
  return path.join(root, provider === 'sqlite' ? 'schema.prisma' : 'schema.postgres.prisma');
}

/**
 * schema.prisma (SQLite) is the source of truth; the PostgreSQL twin differs only in its datasource
 * provider and client output folder, so it is derived, never edited by hand.
 */
export function derivePostgresSchema(sqliteSchema: string): string {
  const derived = sqliteSchema
    .replace(/provider\s*=\s*"sqlite"/, 'provider = "postgresql"')
    .replace(/output(\s*)=(\s*)"\.\/src\/generated\/sqlite"/, 'output$1=$2"./src/generated/postgres"');
  if (derived === sqliteSchema || !derived.includes('"postgresql"') || !derived.includes('generated/postgres')) {
    throw new Error('schema.prisma must keep `provider = "sqlite"` and output "./src/generated/sqlite"');
  }
  return `// Derived from schema.prisma by \`npm run db:migration:new\`. Do not edit by hand.\n${derived}`;
}

export function readSchema(provider: Provider, root = PRISMA_DIR): string {
  return readFileSync(schemaFile(provider, root), 'utf8');
}
