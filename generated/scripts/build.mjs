/**
 * Builds the SDK into dist/, which is both what the workspace's `default` export condition loads and
 * the package `npm pack ./dist` publishes:
 *   - JavaScript: one ES module per entry (src/index, relay, dashboard, voice, relay-messenger) and
 *     shared chunks, by esbuild. The Zod contracts the entries re-export from @conduit/contracts (a
 *     private workspace) are linked in; zod and openapi-fetch stay imports, the package's dependencies.
 *   - Declarations: one .d.ts per entry with the contracts' types inlined, by rollup-plugin-dts, so the
 *     published types name no private package.
 *   - package.json: the publish manifest, written from this workspace's (name, version, the public
 *     exports, the run-time dependencies), and the README.
 * Everything else in the build is checked: a bundle or declaration file that still names
 * @conduit/contracts fails it.
 */
/* global console, process */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const ENTRIES = ['index', 'relay', 'dashboard', 'voice', 'relay-messenger'];
const workspace = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
/** What the published code imports; everything else is linked in. */
const RUNTIME_DEPENDENCIES = {
  zod: `^${workspace.dependencies.zod}`,
  'openapi-fetch': `^${workspace.dependencies['openapi-fetch']}`,
};
const external = (id) => Object.keys(RUNTIME_DEPENDENCIES).some((name) => id === name || id.startsWith(`${name}/`));

rmSync(DIST, { recursive: true, force: true });
mkdirSync(DIST, { recursive: true });

await build({
  absWorkingDir: ROOT,
  entryPoints: Object.fromEntries(ENTRIES.map((name) => [name, path.join(ROOT, 'src', `${name}.ts`)])),
  outdir: DIST,
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  // Node 20.19+ and every current browser: the clients are fetch-based and run in both.
  platform: 'neutral',
  target: 'es2022',
  // The workspace packages' sources (their `development` export condition): no build order needed.
  conditions: ['development'],
  external: Object.keys(RUNTIME_DEPENDENCIES).flatMap((name) => [name, `${name}/*`]),
  legalComments: 'none',
  logLevel: 'warning',
});

const declarations = await rollup({
  input: Object.fromEntries(ENTRIES.map((name) => [name, path.join(ROOT, 'src', `${name}.ts`)])),
  external,
  plugins: [
    dts({
      tsconfig: path.join(ROOT, 'tsconfig.json'),
      compilerOptions: { noEmit: false },
      // Resolve bare imports too (through TypeScript), so the contracts' declarations are inlined.
      respectExternal: true,
    }),
  ],
  onwarn(warning, warn) {
    // The generated OpenAPI types are `export interface paths` and friends per surface: rollup warns
    // that index.d.ts re-exports one name from several namespaces, which is what it means to do.
    if (warning.code === 'CIRCULAR_DEPENDENCY') return;
    warn(warning);
  },
});
await declarations.write({
  dir: DIST,
  format: 'es',
  entryFileNames: '[name].d.ts',
  chunkFileNames: 'chunks/[name]-[hash].d.ts',
});
await declarations.close();

for (const file of listFiles(DIST)) {
  if (readFileSync(file, 'utf8').includes('@conduit/contracts')) {
    throw new Error(`${path.relative(ROOT, file)} still imports @conduit/contracts: the published SDK must not`);
  }
}

const manifest = {
  name: workspace.name,
  version: workspace.version,
  description: workspace.description,
  license: workspace.license,
  type: 'module',
  sideEffects: false,
  engines: workspace.engines,
  exports: {
    ...Object.fromEntries(
      ENTRIES.map((name) => [
        name === 'index' ? '.' : `./${name}`,
        { types: `./${name}.d.ts`, default: `./${name}.js` },
      ]),
    ),
    './package.json': './package.json',
  },
  dependencies: RUNTIME_DEPENDENCIES,
};
writeFileSync(path.join(DIST, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
copyFileSync(path.join(ROOT, 'README.md'), path.join(DIST, 'README.md'));
console.log(`sdk: built ${ENTRIES.length} entries into ${path.relative(process.cwd(), DIST) || '.'}`);

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}
