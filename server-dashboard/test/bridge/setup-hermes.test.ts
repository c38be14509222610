import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { run, setupHermes, type SetupOptions } from '../../src/bridge/setup-hermes.js';
import { BRIDGED_HOOKS } from '../../src/bridge/hook-payload.js';
import { tempHermesHome } from '../support/config.js';
import { BRIDGE } from '../support/host.js';

const USER_CONFIG = `# my Hermes settings
model:
  default: hermes-4 # the good one
hooks:
  post_llm_call:
    - command: "/usr/local/bin/my-logger"   # keep me
toolsets: [web, terminal]
`;

let home: ReturnType<typeof tempHermesHome>;
let options: SetupOptions;

beforeEach(() => {
  home = tempHermesHome();
  const profileHome = path.join(home.root, 'profiles', 'work');
  writeFileSync(path.join(profileHome, 'config.yaml'), USER_CONFIG);
  options = {
    profileHome,
    stateDir: path.join(home.root, 'conduit-host'),
    bridgeScript: BRIDGE,
    nodePath: '/usr/bin/node',
    remove: false,
    now: new Date('2026-01-01T00:00:00Z'),
  };
});
afterEach(() => home.cleanup());

const config = () => readFileSync(path.join(options.profileHome, 'config.yaml'), 'utf8');

describe('conduit setup-hermes', () => {
  it('adds the hooks, keeps the user settings and comments, and is idempotent', async () => {
    const first = await setupHermes(options);
    const written = config();
    expect(first.changed).toBe(true);
    expect(written).toContain('# my Hermes settings');
    expect(written).toContain('# the good one');
    expect(written).toContain('# keep me');
    const parsed = parse(written) as {
      hooks: Record<string, { command: string; matcher?: string; timeout: number }[]>;
      toolsets: string[];
    };
    expect(parsed.toolsets).toEqual(['web', 'terminal']);
    for (const event of BRIDGED_HOOKS) {
      const ours = parsed.hooks[event]?.filter((h) => h.command.includes('conduit-hook.mjs')) ?? [];
      expect(ours).toHaveLength(1);
      expect(ours[0]?.command).toBe(`/usr/bin/node ${BRIDGE} --state ${options.stateDir} ${event}`);
    }
    expect(parsed.hooks.pre_tool_call?.[0]).toMatchObject({ matcher: 'clarify', timeout: 300 });
    expect(parsed.hooks.post_llm_call?.[0]?.command).toBe('/usr/local/bin/my-logger');
    expect(statSync(path.join(options.profileHome, 'config.yaml')).mode & 0o777).toBe(0o600);

    const second = await setupHermes(options);
    expect(second.changed).toBe(false);
    expect(config()).toBe(written);

    const allowlist = JSON.parse(
      readFileSync(path.join(options.profileHome, 'shell-hooks-allowlist.json'), 'utf8'),
    ) as {
      approvals: { event: string; command: string }[];
    };
    expect(allowlist.approvals.map((a) => a.event)).toEqual([...BRIDGED_HOOKS]);
  });

  it('--remove takes out only our entries and leaves the rest as it was', async () => {
    await setupHermes(options);
    await setupHermes({ ...options, remove: true });
    const after = config();
    expect(after).not.toContain('conduit-hook.mjs');
    expect(after).toContain('# keep me');
    expect(parse(after)).toEqual(parse(USER_CONFIG));
    const allowlist = JSON.parse(
      readFileSync(path.join(options.profileHome, 'shell-hooks-allowlist.json'), 'utf8'),
    ) as {
      approvals: unknown[];
    };
    expect(allowlist.approvals).toEqual([]);
  });

  it('refuses a config.yaml it cannot parse, leaving it unchanged; an unknown profile is an error', async () => {
    writeFileSync(path.join(options.profileHome, 'config.yaml'), 'hooks: [unclosed\n');
    await expect(setupHermes(options)).rejects.toThrow(/not valid YAML/);
    expect(config()).toBe('hooks: [unclosed\n');
    mkdirSync(path.join(home.root, 'profiles', 'empty'));
    expect(await run(['--home', home.root, '--profile', 'missing'])).toBe(1);
    expect(await run(['--home', home.root, '--profile', 'empty'])).toBe(0);
    expect(readFileSync(path.join(home.root, 'profiles', 'empty', 'config.yaml'), 'utf8')).toContain(
      'conduit-hook.mjs',
    );
  });
});
