export { createDb, type Db } from './client.js';
export { migrate, migrateSqlite, migratePostgres, listMigrations, providerOf, type MigrateResult } from './migrate.js';
export type { Provider } from './providers.js';
