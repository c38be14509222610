/**
 * `hermes conduit-push …`: the plugin `conduit setup-hermes` writes into a profile home, loaded and run
 * by a stand-in for Hermes' plugin loader and CLI (test/fixtures/hermes-plugin-host), which starts our
 * real `conduit` CLI as a child process.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { hookRunner } from '../../src/bridge/bridge-script.js';
import { CLI_SHIM_PLUGIN, cliShimDir, conduitCommand } from '../../src/bridge/hermes-cli-shim.js';
import { mcpUrl, run, setupHermes, type SetupOptions } from '../../src/bridge/setup-hermes.js';
import { credentialPath } from '../../src/credentials/credential-store.js';
import { tempHermesHome } from '../support/config.js';

const WORKSPACE = fileURLToPath(new URL('../..', import.meta.url));
const STAND_IN = path.join(WORKSPACE, 'test/fixtures/hermes-plugin-host/hermes_stand_in.py');
/** The real CLI from source (dist/ is not built in tests); the shim runs whatever prefix setup gives it. */
const CLI_FROM_SOURCE = [process.execPath, '--import', 'tsx', path.join(WORKSPACE, 'src/cli/main.ts')];

const USER_CONFIG = `# my Hermes settings
model:
  default: hermes-4
plugins:
  enabled:
    - disk-cleanup # mine
  disabled: [conduit_push, other]
`;

let home: ReturnType<typeof tempHermesHome>;
let work: SetupOptions;

function optionsFor(profileHome: string): SetupOptions {
  return {
    profileHome,
    stateDir: path.join(home.root, 'conduit-host'),
    runner: hookRunner('sh', '/bin/sh'),
    mcp: { url: mcpUrl(9119, 'work'), token: 'mcp-token-for-tests-0123456789abcdef0123' },
    conduitCommand: CLI_FROM_SOURCE,
    remove: false,
    now: new Date('2026-01-01T00:00:00Z'),
  };
}

beforeEach(() => {
  home = tempHermesHome();
  work = optionsFor(path.join(home.root, 'profiles', 'work'));
});
afterEach(() => home.cleanup());

const configOf = (profileHome: string) => readFileSync(path.join(profileHome, 'config.yaml'), 'utf8');
const mode = (file: string) => statSync(file).mode & 0o777;

interface Hermes {
  code: number | null;
  stdout: string;
  stderr: string;
  record: { commands: Record<string, unknown>[]; hermes_home: string };
}

/** `hermes [argv…]` with the plugin in `pluginDir`, HERMES_HOME at the root as a plain install has it. */
function hermes(pluginDir: string, ...argv: string[]): Promise<Hermes> {
  const recordFile = path.join(home.root, `record-${argv.join('-')}.json`);
  // Python as Hermes runs it, writing bytecode beside the plugin (this machine's environment turns that off).
  const env: NodeJS.ProcessEnv = { ...process.env, HERMES_HOME: home.root };
  delete env.PYTHONDONTWRITEBYTECODE;
  return new Promise((done, fail) => {
    const child = spawn('python3', [STAND_IN, pluginDir, recordFile, ...argv], {
      cwd: WORKSPACE,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) => {
      const record = JSON.parse(readFileSync(recordFile, 'utf8')) as Hermes['record'];
      done({ code, stdout, stderr, record });
    });
  });
}

describe('the hermes conduit-push plugin written by conduit setup-hermes', () => {
  it('writes plugin.yaml and __init__.py (0600 in a 0700 folder), enables conduit_push, and a second run changes nothing', async () => {
    writeFileSync(path.join(work.profileHome, 'config.yaml'), USER_CONFIG);
    await setupHermes(work);
    const dir = cliShimDir(work.profileHome);
    expect(dir).toBe(path.join(work.profileHome, 'plugins', 'conduit_push'));
    expect(readdirSync(dir).sort()).toEqual(['__init__.py', 'plugin.yaml']);
    expect(mode(dir)).toBe(0o700);
    for (const name of ['__init__.py', 'plugin.yaml']) expect(mode(path.join(dir, name))).toBe(0o600);
    const manifest = parse(readFileSync(path.join(dir, 'plugin.yaml'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: CLI_SHIM_PLUGIN, manifest_version: 1, kind: 'standalone' });
    const init = readFileSync(path.join(dir, '__init__.py'), 'utf8');
    expect(init).toContain(`CONDUIT = ${JSON.stringify(CLI_FROM_SOURCE)}`);
    expect(init).not.toContain('mcp-token-for-tests');

    // Hermes loads a user plugin only when plugins.enabled names it; plugins.disabled would veto it.
    const written = configOf(work.profileHome);
    expect(written).toContain('# mine');
    expect(parse(written)).toMatchObject({
      plugins: { enabled: ['disk-cleanup', 'conduit_push'], disabled: ['other'] },
    });

    const before = Object.fromEntries(
      ['__init__.py', 'plugin.yaml'].map((n) => [n, statSync(path.join(dir, n)).mtimeMs]),
    );
    expect((await setupHermes(work)).changed).toBe(false);
    expect(configOf(work.profileHome)).toBe(written);
    for (const [name, mtime] of Object.entries(before)) expect(statSync(path.join(dir, name)).mtimeMs).toBe(mtime);
  });

  it('--remove takes out the plugin (with the bytecode Python left) and its enablement, leaving config.yaml as it was', async () => {
    const original = USER_CONFIG.replace('[conduit_push, other]', '[other]');
    writeFileSync(path.join(work.profileHome, 'config.yaml'), original);
    await setupHermes(work);
    mkdirSync(path.join(cliShimDir(work.profileHome), '__pycache__'));
    writeFileSync(path.join(cliShimDir(work.profileHome), '__pycache__', '__init__.cpython-311.pyc'), '');
    await setupHermes({ ...work, remove: true });
    expect(existsSync(cliShimDir(work.profileHome))).toBe(false);
    expect(parse(configOf(work.profileHome))).toEqual(parse(original));

    // A config.yaml with no plugins section gets one from setup and loses it again on --remove.
    writeFileSync(path.join(work.profileHome, 'config.yaml'), 'model:\n  default: hermes-4\n');
    await setupHermes(work);
    expect(parse(configOf(work.profileHome))).toMatchObject({ plugins: { enabled: ['conduit_push'] } });
    await setupHermes({ ...work, remove: true });
    expect(configOf(work.profileHome)).toBe('model:\n  default: hermes-4\n');
  });

  it('refuses to overwrite a conduit_push plugin that is not ours, before writing anything; --remove leaves it and its enablement', async () => {
    const foreignConfig = 'plugins:\n  enabled: [conduit_push]\n';
    writeFileSync(path.join(work.profileHome, 'config.yaml'), foreignConfig);
    const dir = cliShimDir(work.profileHome);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'plugin.yaml'), 'name: conduit_push\nversion: 0.24.0\n');
    writeFileSync(path.join(dir, '__init__.py'), 'def register(ctx):\n    pass\n');
    writeFileSync(path.join(dir, 'cli.py'), '');

    await expect(setupHermes(work)).rejects.toThrow(
      /plugins\/conduit_push holds a plugin that is not the Conduit host's/,
    );
    expect(configOf(work.profileHome)).toBe(foreignConfig);
    expect(existsSync(path.join(work.profileHome, 'shell-hooks-allowlist.json'))).toBe(false);
    expect(readFileSync(path.join(dir, 'plugin.yaml'), 'utf8')).toBe('name: conduit_push\nversion: 0.24.0\n');

    await setupHermes({ ...work, remove: true });
    expect(readdirSync(dir).sort()).toEqual(['__init__.py', 'cli.py', 'plugin.yaml']);
    expect(parse(configOf(work.profileHome))).toEqual(parse(foreignConfig));
  });

  it('the CLI writes the plugin with the absolute node and bin/conduit.mjs it runs as', async () => {
    expect(await run(['--home', home.root, '--profile', 'work'])).toBe(0);
    const init = readFileSync(path.join(cliShimDir(work.profileHome), '__init__.py'), 'utf8');
    const command = conduitCommand(process.execPath);
    expect(command).toEqual([process.execPath, path.join(WORKSPACE, 'bin/conduit.mjs')]);
    expect(init).toContain(`CONDUIT = ${JSON.stringify(command)}`);
    expect(await run(['--home', home.root, '--profile', 'work', '--remove'])).toBe(0);
    expect(existsSync(cliShimDir(work.profileHome))).toBe(false);
  });

  it('Hermes runs `conduit push` for the profile it runs as, passing output and exit codes through', async () => {
    const root = optionsFor(home.root);
    await setupHermes(root);
    await setupHermes(work);
    writeFileSync(
      credentialPath(work.profileHome),
      JSON.stringify({
        credential: 'SECRET-credential-value',
        gateway_name: 'box Hermes',
        installation_id: 'i',
        gateway_id: 'g',
        relay_url: 'https://r.example',
      }),
    );

    // `hermes conduit-push status`: the default profile (the root home), which is not paired.
    const plain = await hermes(cliShimDir(home.root), 'conduit-push', 'status');
    expect(plain.record.commands).toEqual([
      {
        name: 'conduit-push',
        help: expect.any(String) as string,
        description: expect.any(String) as string,
        setup_fn: true,
        handler_fn: true,
      },
    ]);
    expect(plain).toMatchObject({ code: 1, stdout: 'This Hermes profile is not paired with Conduit.\n' });

    // `hermes -p work conduit-push status`: Hermes points HERMES_HOME at the profile, the CLI follows.
    const profiled = await hermes(cliShimDir(work.profileHome), '-p', 'work', 'conduit-push', 'status');
    expect(profiled.record.hermes_home).toBe(work.profileHome);
    expect(profiled.code).toBe(0);
    expect(profiled.stdout).toContain('Paired: box Hermes\nRelay: https://r.example\n');
    expect(profiled.stdout).toContain(`State: ${credentialPath(work.profileHome)}\n`);
    expect(profiled.stdout + profiled.stderr).not.toContain('SECRET');

    // `hermes conduit-push pair BAD`: the CLI's refusal on stderr, its exit code from hermes.
    const bad = await hermes(cliShimDir(home.root), 'conduit-push', 'pair', 'BAD');
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toBe('That is not a Conduit pairing code (expected XXXXX-XXXXX)\n');

    // Python left its bytecode in the plugin folder; --remove still takes the whole folder out.
    expect(existsSync(path.join(cliShimDir(home.root), '__pycache__'))).toBe(true);
    await setupHermes({ ...root, remove: true });
    expect(existsSync(cliShimDir(home.root))).toBe(false);
  });
});
