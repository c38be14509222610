/**
 * The SDK as a Conduit developer gets it: `npm pack` of generated/dist (what `npm run build` makes),
 * installed from the tarball into an empty project that has nothing of this repository, then used as
 * its README shows: the JavaScript example with plain `node` against a real relay (the compiled one),
 * the TypeScript example compiled with `tsc --strict` (and its deliberate mistakes, unmarked, refused),
 * the Zod contracts at run time.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../suite/launch.js';
import { compiled, plainEnv, startCompiledRelay, stopCompiled } from './support/compiled.js';

const SDK = path.join(REPO_ROOT, 'generated');
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'conduit-sdk-'));
const project = path.join(scratch, 'project');
let tarball = '';

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(command, args, { cwd, env: plainEnv(env), encoding: 'utf8', timeout: 180_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, output: result.stdout + result.stderr };
}

beforeAll(() => {
  compiled('generated/dist/package.json');
  const packed = run('npm', ['pack', './dist', '--pack-destination', scratch, '--json'], SDK);
  expect(packed.status, packed.output).toBe(0);
  const [info] = JSON.parse(packed.stdout) as { filename: string }[];
  tarball = path.join(scratch, info?.filename ?? '');
  run('mkdir', ['-p', project], scratch);
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'sdk-scratch', version: '1.0.0', private: true, type: 'module' }),
  );
  // Only the tarball and what it depends on (zod, openapi-fetch), from npm's cache when it has them.
  const installed = run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], project);
  expect(installed.status, installed.output).toBe(0);
}, 240_000);

afterAll(async () => {
  await stopCompiled();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the @conduit/sdk package', () => {
  it('packs compiled ES modules and declarations, and depends on nothing private', () => {
    const listing = run('tar', ['-tzf', tarball], scratch);
    expect(listing.status, listing.output).toBe(0);
    const files = listing.stdout.trim().split('\n');
    for (const entry of ['index', 'relay', 'dashboard', 'voice', 'relay-messenger']) {
      expect(files).toContain(`package/${entry}.js`);
      expect(files).toContain(`package/${entry}.d.ts`);
    }
    expect(files).toContain('package/README.md');
    // No TypeScript sources, no repository files.
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    const manifest = JSON.parse(readFileSync(path.join(project, 'node_modules/@conduit/sdk/package.json'), 'utf8')) as {
      name: string;
      private?: boolean;
      dependencies: Record<string, string>;
      exports: Record<string, unknown>;
    };
    expect(manifest.name).toBe('@conduit/sdk');
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['openapi-fetch', 'zod']);
    expect(Object.keys(manifest.exports).sort()).toEqual(
      ['.', './dashboard', './package.json', './relay', './relay-messenger', './voice'].sort(),
    );
    // The installed code names no workspace package.
    for (const file of files.filter((name) => /\.(js|d\.ts)$/.test(name))) {
      const text = readFileSync(path.join(project, 'node_modules/@conduit/sdk', file.slice('package/'.length)), 'utf8');
      expect(text, file).not.toMatch(/@conduit\/(contracts|prisma|server-)/);
    }
  });

  it("runs the README's JavaScript example with plain node against a real relay", async () => {
    const example = readFileSync(path.join(SDK, 'examples/pair-and-notify.mjs'), 'utf8');
    expect(readFileSync(path.join(SDK, 'README.md'), 'utf8')).toContain(example.trim());
    copyFileSync(path.join(SDK, 'examples/pair-and-notify.mjs'), path.join(project, 'pair-and-notify.mjs'));
    const relay = await startCompiledRelay({
      DATA_PATH: path.join(scratch, 'relay', 'relay.sqlite'),
      APNS_TOPIC: 'dev.conduit.sdk',
    });
    const result = run(process.execPath, ['pair-and-notify.mjs'], project, {
      RELAY_URL: relay.url,
      APNS_TOPIC: 'dev.conduit.sdk',
    });
    expect(result.status, result.output).toBe(0);
    const outcome = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
    expect(outcome).toMatchObject({ status: 202, answer: { accepted: true, delivered: true } });
    expect(outcome.installation).toMatch(/^[0-9a-f-]{36}$/);

    // The TypeScript example, compiled by tsc --strict (below), answers against the same relay.
    compileTypedExample();
    const typed = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import('./out/typed.js').then(async (m) => console.log(await m.relayIsUp(${JSON.stringify(relay.url)}), m.isClientEventType('session.update'), m.isClientEventType('nope')))`,
      ],
      project,
    );
    expect(typed.status, typed.output).toBe(0);
    expect(typed.stdout.trim()).toBe('true true false');
  });

  it('type-checks the TypeScript example with tsc --strict and refuses its mistakes once unmarked', () => {
    compileTypedExample();
    // The same file without its @ts-expect-error marks: each mistake must be a compile error, so the
    // client's paths and bodies are typed (an `any` anywhere would let them through).
    const unmarked = readFileSync(path.join(project, 'typed.ts'), 'utf8')
      .split('\n')
      .filter((line) => !line.includes('@ts-expect-error'))
      .join('\n');
    writeFileSync(path.join(project, 'typed.ts'), unmarked);
    const refused = run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit'], project);
    expect(refused.status).not.toBe(0);
    const lines = unmarked.split('\n');
    const lineOf = (text: string) => lines.findIndex((line) => line.includes(text)) + 1;
    const errorLines = [...refused.stdout.matchAll(/typed\.ts\((\d+),\d+\): error TS\d+/g)].map((m) => Number(m[1]));
    expect(errorLines.sort((a, b) => a - b)).toEqual([lineOf("'/v1/nothing-here'"), lineOf("environment: 'sandbox'")]);
    expect(refused.stdout).toContain(`Type '"sandbox"' is not assignable to type '"production"'`);
  });

  it('validates with the Zod contracts at run time', () => {
    const script = `
      import { relay, dashboard, voice, createRelayClient } from '@conduit/sdk';
      import { hostEvent } from '@conduit/sdk/relay';
      const out = {
        sameSchema: relay.hostEvent === hostEvent,
        goodEvent: hostEvent.safeParse({ type: 'turn.failed', event_id: 'evt-12345678', title: 't' }).success,
        badType: hostEvent.safeParse({ type: 'nope', event_id: 'evt-12345678' }).success,
        shortId: hostEvent.safeParse({ type: 'turn.failed', event_id: 'short' }).success,
        choice: dashboard.respondApproval.body.safeParse({ session_key: 'card-1', choice: 'sometimes' }).error?.issues[0]?.message,
        routes: Object.keys(relay.relaySurface.routes).length,
        voiceRoute: voice.voiceSurface.routes.getDiscovery.path,
        client: typeof createRelayClient({ baseUrl: 'http://127.0.0.1:1' }).GET,
      };
      console.log(JSON.stringify(out));`;
    const result = run(process.execPath, ['--input-type=module', '-e', script], project);
    expect(result.status, result.output).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      sameSchema: true,
      goodEvent: true,
      badType: false,
      shortId: false,
      choice: 'invalid_choice',
      routes: expect.any(Number) as number,
      voiceRoute: '/v1/realtime/discovery',
      client: 'function',
    });
    expect((JSON.parse(result.stdout) as { routes: number }).routes).toBeGreaterThan(20);
  });
});

let typedCompiled = false;

/** Copies the README's TypeScript example into the project and compiles it strictly to out/ (once). */
function compileTypedExample(): void {
  if (typedCompiled) return;
  const example = readFileSync(path.join(SDK, 'examples/typed.ts'), 'utf8');
  expect(readFileSync(path.join(SDK, 'README.md'), 'utf8')).toContain(example.trim());
  writeFileSync(path.join(project, 'typed.ts'), example);
  writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023', 'DOM'],
        types: [],
        // The SDK's declarations are checked too, not only the example's use of them.
        skipLibCheck: false,
        outDir: 'out',
      },
      files: ['typed.ts'],
    }),
  );
  expect(existsSync(TSC), 'the repository installs typescript').toBe(true);
  const result = run(process.execPath, [TSC, '-p', 'tsconfig.json'], project);
  expect(result.status, result.output).toBe(0);
  typedCompiled = true;
}
