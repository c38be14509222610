import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { chooseHookRunner, hookRunner } from '../../src/bridge/bridge-script.js';
import { hermesMtime, mcpUrl, run, setupHermes, type SetupOptions } from '../../src/bridge/setup-hermes.js';
import { BRIDGED_HOOKS } from '../../src/bridge/hook-payload.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { callingSkillPath } from '../../src/features/calls/calling-skill.js';
import { skillPath } from '../../src/kernel/hermes-skills.js';
import { tempHermesHome } from '../support/config.js';

const SH_RUNNER = hookRunner('sh', '/bin/sh');
const NODE_RUNNER = hookRunner('node', '/usr/bin/node');
const MCP_TOKEN = 'mcp-token-for-tests-0123456789abcdef0123';

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
    runner: SH_RUNNER,
    mcp: { url: mcpUrl(9119, 'work'), token: MCP_TOKEN },
    remove: false,
    now: new Date('2026-01-01T00:00:00Z'),
  };
});
afterEach(() => home.cleanup());

const config = () => readFileSync(path.join(options.profileHome, 'config.yaml'), 'utf8');
const allowlist = () =>
  JSON.parse(readFileSync(path.join(options.profileHome, 'shell-hooks-allowlist.json'), 'utf8')) as {
    approvals: { event: string; command: string }[];
  };

interface ParsedConfig {
  hooks: Record<string, { command: string; matcher?: string; timeout: number }[]>;
  mcp_servers?: Record<string, { url: string; headers: Record<string, string>; [key: string]: unknown }>;
  toolsets: string[];
}

describe('conduit setup-hermes', () => {
  it('adds the hooks and the MCP entry, keeps the user settings and comments, and is idempotent', async () => {
    const first = await setupHermes(options);
    const written = config();
    expect(first.changed).toBe(true);
    expect(written).toContain('# my Hermes settings');
    expect(written).toContain('# the good one');
    expect(written).toContain('# keep me');
    const parsed = parse(written) as ParsedConfig;
    expect(parsed.toolsets).toEqual(['web', 'terminal']);
    for (const event of BRIDGED_HOOKS) {
      const ours = parsed.hooks[event]?.filter((h) => h.command.includes('conduit-hook.')) ?? [];
      expect(ours).toHaveLength(1);
      expect(ours[0]?.command).toBe(`/bin/sh ${SH_RUNNER.script} --state ${options.stateDir} ${event}`);
    }
    expect(SH_RUNNER.script).toMatch(/bin\/conduit-hook\.sh$/);
    expect(parsed.mcp_servers).toEqual({
      conduit: {
        url: 'http://127.0.0.1:9119/_conduit/mcp?profile=work',
        headers: { Authorization: `Bearer ${MCP_TOKEN}` },
      },
    });
    // Every tool start is Lock Screen progress; only clarify needs the tool's end.
    expect(parsed.hooks.pre_tool_call?.[0]).toMatchObject({ timeout: 300 });
    expect(parsed.hooks.pre_tool_call?.[0]?.matcher).toBeUndefined();
    expect(parsed.hooks.post_tool_call?.[0]).toMatchObject({ matcher: 'clarify' });
    expect(parsed.hooks.post_llm_call?.[0]?.command).toBe('/usr/local/bin/my-logger');
    expect(statSync(path.join(options.profileHome, 'config.yaml')).mode & 0o777).toBe(0o600);

    const second = await setupHermes(options);
    expect(second.changed).toBe(false);
    expect(config()).toBe(written);

    expect(allowlist().approvals.map((a) => a.event)).toEqual([...BRIDGED_HOOKS]);
    expect(allowlist().approvals[0]?.command).toBe(
      `/bin/sh ${SH_RUNNER.script} --state ${options.stateDir} ${BRIDGED_HOOKS[0]}`,
    );
    // Hermes' own format (Python isoformat, UTC as Z) for the bridge script, so `hermes hooks doctor`
    // sees no drift since approval.
    const recorded = (allowlist().approvals[0] as { script_mtime_at_approval?: unknown }).script_mtime_at_approval;
    expect(recorded).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$/);
    expect(Math.abs(Date.parse(String(recorded)) - statSync(SH_RUNNER.script).mtimeMs)).toBeLessThan(1);
  });

  it('--remove takes out only our entries and leaves the rest as it was', async () => {
    await setupHermes(options);
    await setupHermes({ ...options, remove: true });
    const after = config();
    expect(after).not.toContain('conduit-hook.');
    expect(after).not.toContain('mcp_servers');
    expect(after).toContain('# keep me');
    expect(parse(after)).toEqual(parse(USER_CONFIG));
    expect(allowlist().approvals).toEqual([]);
  });

  it('installs the calling-the-user skill conduit_call_user points to (0600), never over a skill of the user, and --remove takes ours out', async () => {
    const skill = callingSkillPath(options.profileHome);
    await setupHermes(options);
    const text = readFileSync(skill, 'utf8');
    expect(text).toMatch(/^---\nname: calling-the-user\ndescription: .+\n---\n/);
    expect(text).toContain('conduit_call_user');
    expect(statSync(skill).mode & 0o777).toBe(0o600);
    expect((await setupHermes(options)).changed).toBe(false);
    await setupHermes({ ...options, remove: true });
    expect(existsSync(skill)).toBe(false);
    mkdirSync(path.dirname(skill), { recursive: true });
    writeFileSync(skill, '---\nname: calling-the-user\n---\nMy own rules.\n');
    await setupHermes(options);
    await setupHermes({ ...options, remove: true });
    expect(readFileSync(skill, 'utf8')).toContain('My own rules.');
  });

  it('installs the reading-health-data skill conduit_health goes with (0600) beside calling-the-user, and --remove takes both out', async () => {
    const skill = skillPath(options.profileHome, 'reading-health-data');
    await setupHermes(options);
    const text = readFileSync(skill, 'utf8');
    expect(text).toMatch(/^---\nname: reading-health-data\ndescription: .+\n---\n/);
    for (const rule of ['conduit_health', 'overview', '92 days', 'UTC', 'read-only', "It's the user's data"]) {
      expect(text).toContain(rule);
    }
    expect(statSync(skill).mode & 0o777).toBe(0o600);
    expect(existsSync(callingSkillPath(options.profileHome))).toBe(true);
    // A user's own skill under the name is never overwritten nor removed; ours beside it still is.
    await setupHermes({ ...options, remove: true });
    expect(existsSync(skill)).toBe(false);
    expect(existsSync(path.join(options.profileHome, 'skills', 'conduit'))).toBe(false);
    mkdirSync(path.dirname(skill), { recursive: true });
    writeFileSync(skill, '---\nname: reading-health-data\n---\nMine.\n');
    await setupHermes(options);
    expect(readFileSync(skill, 'utf8')).toBe('---\nname: reading-health-data\n---\nMine.\n');
    expect(existsSync(callingSkillPath(options.profileHome))).toBe(true);
    await setupHermes({ ...options, remove: true });
    expect(readFileSync(skill, 'utf8')).toContain('Mine.');
    expect(existsSync(callingSkillPath(options.profileHome))).toBe(false);
  });

  it('installs the using-location skill conduit_location goes with (0600), and --remove takes it out', async () => {
    const skill = skillPath(options.profileHome, 'using-location');
    await setupHermes(options);
    const text = readFileSync(skill, 'utf8');
    expect(text).toMatch(/^---\nname: using-location\ndescription: .+\n---\n/);
    for (const rule of [
      'conduit_location',
      'now first',
      'locate',
      'set_rule',
      'Place rule: <what>',
      'remove_rule',
      'private',
    ]) {
      expect(text).toContain(rule);
    }
    expect(statSync(skill).mode & 0o777).toBe(0o600);
    await setupHermes({ ...options, remove: true });
    expect(existsSync(skill)).toBe(false);
    expect(existsSync(path.join(options.profileHome, 'skills', 'conduit'))).toBe(false);
  });

  it('records an mtime exactly as Python prints it (microseconds, or none when whole)', () => {
    const file = path.join(home.root, 'script.sh');
    writeFileSync(file, '');
    utimesSync(file, new Date('2026-03-04T05:06:07Z'), new Date('2026-03-04T05:06:07Z'));
    expect(hermesMtime(file)).toBe('2026-03-04T05:06:07Z');
    utimesSync(file, 1772600767.25, 1772600767.25);
    expect(hermesMtime(file)).toBe('2026-03-04T05:06:07.250000Z');
  });

  it('switching between the sh and the Node bridge replaces our entries, never doubles them', async () => {
    await setupHermes(options);
    await setupHermes({ ...options, runner: NODE_RUNNER });
    const parsed = parse(config()) as ParsedConfig;
    for (const event of BRIDGED_HOOKS) {
      const ours = parsed.hooks[event]?.filter((h) => h.command.includes('conduit-hook.')) ?? [];
      expect(ours.map((h) => h.command)).toEqual([
        `/usr/bin/node ${NODE_RUNNER.script} --state ${options.stateDir} ${event}`,
      ]);
    }
    expect(allowlist().approvals).toHaveLength(BRIDGED_HOOKS.length);
    expect(allowlist().approvals.every((a) => a.command.startsWith('/usr/bin/node '))).toBe(true);
    await setupHermes({ ...options, runner: NODE_RUNNER, remove: true });
    expect(parse(config())).toEqual(parse(USER_CONFIG));
  });

  it("keeps the user's additions to our MCP entry and their other servers; a new token replaces the old", async () => {
    writeFileSync(
      path.join(options.profileHome, 'config.yaml'),
      USER_CONFIG +
        `mcp_servers:
  time: # my clock
    command: uvx
    args: [mcp-server-time]
  conduit:
    url: "http://127.0.0.1:9119/_conduit/mcp?profile=work"
    enabled: false # not today
    tools:
      include: [conduit_status]
`,
    );
    await setupHermes(options);
    await setupHermes({ ...options, mcp: { ...options.mcp, token: 'another-token-0123456789abcdef0123456' } });
    const written = config();
    expect(written).toContain('# my clock');
    expect(written).toContain('# not today');
    const parsed = parse(written) as ParsedConfig;
    expect(parsed.mcp_servers?.time).toEqual({ command: 'uvx', args: ['mcp-server-time'] });
    expect(parsed.mcp_servers?.conduit).toEqual({
      url: 'http://127.0.0.1:9119/_conduit/mcp?profile=work',
      enabled: false,
      tools: { include: ['conduit_status'] },
      headers: { Authorization: 'Bearer another-token-0123456789abcdef0123456' },
    });
    await setupHermes({ ...options, remove: true });
    expect(parse(config())).toMatchObject({ mcp_servers: { time: { command: 'uvx' } } });
    expect((parse(config()) as ParsedConfig).mcp_servers).not.toHaveProperty('conduit');
  });

  it('refuses to overwrite an mcp_servers.conduit entry that is not ours, and --remove leaves it', async () => {
    const foreign = USER_CONFIG + 'mcp_servers:\n  conduit:\n    command: my-own-conduit\n';
    writeFileSync(path.join(options.profileHome, 'config.yaml'), foreign);
    await expect(setupHermes(options)).rejects.toThrow(/not the Conduit host's entry/);
    expect(config()).toBe(foreign);
    await setupHermes({ ...options, remove: true });
    expect(parse(config())).toEqual(parse(foreign));
  });

  it('installs the sh bridge when curl is on PATH at setup time, the Node bridge otherwise or when asked', () => {
    const bin = path.join(home.root, 'bin');
    mkdirSync(bin);
    expect(chooseHookRunner({ pathList: bin, nodePath: '/usr/bin/node' }).runner.kind).toBe('node');
    writeFileSync(path.join(bin, 'curl'), '#!/bin/sh\n');
    expect(chooseHookRunner({ pathList: bin, nodePath: '/usr/bin/node' }).runner.kind).toBe('node');
    chmodSync(path.join(bin, 'curl'), 0o755);
    const found = chooseHookRunner({ pathList: `relative:${bin}`, nodePath: '/usr/bin/node' });
    expect(found).toMatchObject({ runner: { kind: 'sh', interpreter: '/bin/sh' }, curl: path.join(bin, 'curl') });
    expect(chooseHookRunner({ pathList: bin, nodePath: '/usr/bin/node', preferNode: true }).runner).toMatchObject({
      kind: 'node',
      interpreter: '/usr/bin/node',
    });
  });

  it('refuses a config.yaml it cannot parse, leaving it unchanged; an unknown profile is an error', async () => {
    writeFileSync(path.join(options.profileHome, 'config.yaml'), 'hooks: [unclosed\n');
    await expect(setupHermes(options)).rejects.toThrow(/not valid YAML/);
    expect(config()).toBe('hooks: [unclosed\n');
    mkdirSync(path.join(home.root, 'profiles', 'empty'));
    expect(await run(['--home', home.root, '--profile', 'missing'])).toBe(1);
    expect(await run(['--home', home.root, '--profile', 'empty', '--port', '70000'])).toBe(2);
    expect(await run(['--home', home.root, '--profile', 'empty', '--port', '9200'])).toBe(0);
    const written = parse(
      readFileSync(path.join(home.root, 'profiles', 'empty', 'config.yaml'), 'utf8'),
    ) as ParsedConfig;
    // This machine has curl, so the CLI installs the sh bridge; the token is the service's own.
    expect(written.hooks.pre_llm_call?.[0]?.command).toMatch(/^\/bin\/sh \S+\/bin\/conduit-hook\.sh --state /);
    const token = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
    expect(written.mcp_servers?.conduit).toEqual({
      url: 'http://127.0.0.1:9200/_conduit/mcp?profile=empty',
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(await run(['--home', home.root, '--profile', 'empty', '--node-hook'])).toBe(0);
    const node = parse(readFileSync(path.join(home.root, 'profiles', 'empty', 'config.yaml'), 'utf8')) as ParsedConfig;
    expect(node.hooks.pre_llm_call?.map((h) => h.command)).toEqual([
      `${process.execPath} ${NODE_RUNNER.script} --state ${path.join(home.root, 'conduit-host')} pre_llm_call`,
    ]);
  });
});
