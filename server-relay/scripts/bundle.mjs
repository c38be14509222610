/**
 * The relay's production entry as one bundle. `npm run build` compiles src/ with tsc (dist/*.js, the
 * declarations), then this links the compiled dist/main.js and everything it imports — the relay,
 * the @conduit packages, zod, Fastify — into dist/main.js, with a chunk in dist/chunks/ for each part
 * it imports later. Node's module loader handles some 400 files one by one at start (resolution,
 * package.json lookups, reads, linking); bundled, the relay answers /healthz in two thirds of the time
 * on Node 20 and 24 alike (README, performance), still run by plain `node dist/main.js`.
 *
 * Left to node_modules, loaded at run time: native and WebAssembly code (better-sqlite3, Prisma's
 * query compiler) and what the relay loads only when asked (pg and the PostgreSQL adapter, Fastify's
 * JSON-schema compilers).
 */
/* global console */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const ENTRY = path.join(DIST, 'main.js');
const MARK = '// The relay bundled by scripts/bundle.mjs from the compiled dist/main.js.';

/**
 * Bundled modules that read `import.meta`. In the bundle it describes dist/main.js or a chunk, not the
 * module's own file, so a path computed from it would be wrong; each of these only resolves a package
 * by name (createRequire), which works from anywhere. A new one fails the build until it does the same.
 */
const LOCATION_INDEPENDENT = [
  'server-relay/dist/app.js', // resolves fastify, then its schema compilers
  'prisma/dist/client.js', // requires @prisma/adapter-pg for a PostgreSQL URL
  'prisma/dist/providers.js', // finds prisma/ through @conduit/prisma/package.json
  // Prisma's generated clients set a global __dirname no code path of ours reads (no engine files).
  'prisma/dist/generated/sqlite/client.js',
  'prisma/dist/generated/postgres/client.js',
];

if (readFileSync(ENTRY, 'utf8').startsWith(MARK)) {
  throw new Error('dist/main.js is already the bundle: compile first (`npm run build` runs tsc, then this)');
}

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { main: ENTRY },
  outdir: DIST,
  write: false,
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
  external: [
    'better-sqlite3',
    'pg',
    '@prisma/adapter-pg',
    '@prisma/client/runtime/query_compiler_*',
    '@fastify/ajv-compiler',
    '@fastify/fast-json-stringify-compiler',
  ],
  // The bundled CommonJS packages (Fastify and its own dependencies) require Node's built-ins and the
  // externals above; an ES module has no `require`, so each output file makes its own.
  banner: {
    js: `${MARK}\nimport { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);`,
  },
});

// Checked before anything is written: the entry is still tsc's output.
const misplaced = Object.keys(result.metafile.inputs)
  .map((input) => path.resolve(ROOT, input))
  .filter((file) => /\bimport\.meta\b/.test(readFileSync(file, 'utf8')))
  .map((file) => path.relative(path.dirname(ROOT), file).split(path.sep).join('/'))
  .filter((file) => !LOCATION_INDEPENDENT.includes(file));
if (misplaced.length > 0) {
  throw new Error(
    `bundled modules read import.meta, which in the bundle is dist/main.js's: ${misplaced.join(', ')}. ` +
      'Resolve files through a package name (createRequire(import.meta.url).resolve(...)), then list the module in scripts/bundle.mjs.',
  );
}

for (const file of result.outputFiles) {
  mkdirSync(path.dirname(file.path), { recursive: true });
  writeFileSync(file.path, file.contents);
}
// Chunks of earlier builds (their names carry a content hash) go once the new ones are written.
const written = new Set(result.outputFiles.map((file) => file.path));
const chunks = path.join(DIST, 'chunks');
for (const name of readdirSync(chunks)) {
  if (!written.has(path.join(chunks, name))) rmSync(path.join(chunks, name));
}
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
console.log(`relay bundled: dist/main.js and ${written.size - 1} other files, ${(bytes / 1e6).toFixed(1)} MB`);
