/**
 * Prisma's schema engine compiled to WebAssembly, used only to compute migration SQL offline (the
 * native engine cannot be downloaded on our machines). We diff datamodel against datamodel, so no
 * database is touched: the previous schema is kept as a snapshot beside each provider's migrations.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as engineBindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { Provider } from './providers.js';

type WasmExports = Record<string, unknown>;

interface WasmGlue {
  __wbg_set_wasm(exports: WasmExports): void;
}

/** The slice of the WebAssembly global we use (Node's types do not declare it without the DOM lib). */
const wasmRuntime = (
  globalThis as unknown as {
    WebAssembly: {
      instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: WasmExports } }>;
    };
  }
).WebAssembly;

let loaded: Promise<void> | undefined;

function loadEngine(): Promise<void> {
  loaded ??= (async () => {
    const wasmPath = createRequire(import.meta.url)
      .resolve('@prisma/schema-engine-wasm/schema_engine_bg')
      .replace(/\.js$/, '.wasm');
    const imports = { './schema_engine_bg.js': engineBindings };
    const { instance } = await wasmRuntime.instantiate(readFileSync(wasmPath), imports);
    (engineBindings as unknown as WasmGlue).__wbg_set_wasm(instance.exports);
    const start = instance.exports.__wbindgen_start;
    if (typeof start === 'function') (start as () => void)();
  })();
  return loaded;
}

/** The SQL that turns a database shaped by `from` (null: empty) into one shaped by `to`. Empty string: no change. */
export async function diffSchemas(
  provider: Provider,
  from: string | null,
  to: string,
  postgresUrl?: string,
): Promise<string> {
  await loadEngine();
  // The engine wants a live adapter even for a datamodel-only diff: an in-memory SQLite, or a
  // PostgreSQL database it only reads the server version from.
  if (provider === 'postgres' && !postgresUrl) throw new Error('a PostgreSQL URL is needed to diff PostgreSQL schemas');
  const adapter =
    provider === 'sqlite'
      ? new PrismaBetterSqlite3({ url: ':memory:' })
      : new PrismaPg({ connectionString: postgresUrl });
  const engine = await engineBindings.SchemaEngine.new(
    { datamodels: [['schema.prisma', to]] },
    () => {},
    bindMigrationAwareSqlAdapterFactory(adapter),
  );
  try {
    const result = await engine.diff({
      from:
        from === null
          ? { tag: 'empty' }
          : { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: from }] },
      to: { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: to }] },
      script: true,
      exitCode: false,
      filters: { externalTables: [], externalEnums: [] },
    });
    const sql = result.stdout ?? '';
    return sql.includes('This is an empty migration') ? '' : sql;
  } finally {
    engine.free();
  }
}
