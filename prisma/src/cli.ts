/**
 * db:migrate      — apply committed migrations to DATABASE_URL (a file path / file: URL, or postgresql://).
 * db:migration:new NAME — after editing schema.prisma: derive schema.postgres.prisma, write one
 *   migration per provider (the SQL diff from the last snapshot), refresh the snapshots, regenerate clients.
 */
import { execFileSync } from 'node:child_process';
import { migrate } from './migrate.js';
import { createMigration } from './migration-new.js';
import { PRISMA_DIR } from './providers.js';
import { acquirePostgres } from './testing/postgres.js';

async function main(): Promise<void> {
  const [command, argument] = process.argv.slice(2);
  if (command === 'migrate') {
    const url = argument ?? process.env.DATABASE_URL ?? process.env.DATA_PATH;
    if (!url) throw new Error('usage: db:migrate [URL]  (or set DATABASE_URL / DATA_PATH)');
    const result = await migrate(url);
    console.log(`applied ${result.applied.length} migration(s), ${result.alreadyApplied.length} already applied`);
  } else if (command === 'new') {
    if (!argument) throw new Error('usage: npm run db:migration:new -- NAME');
    // PostgreSQL's diff needs a live server: DATABASE_URL_PG, else an embedded one for this command.
    const postgres = await acquirePostgres();
    let created: string[];
    try {
      created = await createMigration(argument, { postgresUrl: postgres.url });
    } finally {
      await postgres.release();
    }
    if (created.length === 0) console.log('schema.prisma has no changes since the last migration');
    else console.log(`created ${created.join(', ')}`);
    execFileSync('npm', ['run', 'generate'], { cwd: PRISMA_DIR, stdio: 'inherit' });
  } else {
    throw new Error('usage: cli.ts migrate [URL] | new NAME');
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
