import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hookRunner } from '../../src/bridge/bridge-script.js';
import { mcpUrl, setupHermes, type SetupOptions } from '../../src/bridge/setup-hermes.js';
import { skillPath } from '../../src/kernel/hermes-skills.js';
import { tempHermesHome } from '../support/config.js';

/** `conduit setup-hermes` installs the using-calendar skill conduit_calendar and conduit_phone go with. */
let home: ReturnType<typeof tempHermesHome>;
let options: SetupOptions;

beforeEach(() => {
  home = tempHermesHome();
  const profileHome = path.join(home.root, 'profiles', 'work');
  writeFileSync(path.join(profileHome, 'config.yaml'), 'toolsets: [web]\n');
  options = {
    profileHome,
    stateDir: path.join(home.root, 'conduit-host'),
    runner: hookRunner('sh', '/bin/sh'),
    mcp: { url: mcpUrl(9119, 'work'), token: 'mcp-token-for-tests-0123456789abcdef0123' },
    remove: false,
    now: new Date('2026-01-01T00:00:00Z'),
  };
});
afterEach(() => home.cleanup());

describe('the using-calendar skill', () => {
  it('is installed (0600) with the tools it explains, and --remove takes it out', async () => {
    const skill = skillPath(options.profileHome, 'using-calendar');
    await setupHermes(options);
    const text = readFileSync(skill, 'utf8');
    expect(text).toMatch(/^---\nname: using-calendar\ndescription: .+\n---\n/);
    const rules = ['conduit_calendar', 'conduit_phone', 'Overview first', 'as_of', 'free_busy', 'Subagents'];
    // Writes are pending changes, with how they went and the alarms and contacts tools (plugin 0.30).
    rules.push(
      'pending change',
      '"pending"',
      'dismissed',
      'set_alarm',
      'set_timer',
      'cancel_alarm',
      'conduit_contacts',
    );
    for (const rule of rules) {
      expect(text).toContain(rule);
    }
    expect(statSync(skill).mode & 0o777).toBe(0o600);
    await setupHermes({ ...options, remove: true });
    expect(existsSync(skill)).toBe(false);
  });
});
