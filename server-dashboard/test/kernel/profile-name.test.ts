import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { WireError } from '@conduit/contracts/server';
import { run as setupHermes } from '../../src/bridge/setup-hermes.js';
import { resolveProfileHome } from '../../src/credentials/hermes-home.js';
import { resolveProfile } from '../../src/fronting/profiles.js';
import { profileHome } from '../../src/messenger/profile-settings.js';

/**
 * One profile-name rule (contracts/src/dashboard/profile.ts, Hermes' own `_PROFILE_ID_RE`) for every
 * place a name arrives: `?profile=` on the plugin routes and MCP, a hook's `profile`, `--profile` of the
 * CLIs and of the messenger. Before it, the host allowed capitals and the messenger dots as well.
 */
const NAMES: [name: string, accepted: boolean][] = [
  ['work', true],
  ['coder', true],
  ['a', true],
  ['0', true],
  ['9lives', true],
  ['my-bot', true],
  ['my_bot', true],
  ['a-', true],
  ['x'.repeat(64), true],
  ['Work', false],
  ['WORK', false],
  ['my.bot', false],
  ['.hidden', false],
  ['-lead', false],
  ['_lead', false],
  ['..', false],
  ['../etc', false],
  ['a/b', false],
  ['a\\b', false],
  ['a b', false],
  ['naïve', false],
  ['x'.repeat(65), false],
];

let root: string;
let empty: string;

beforeAll(() => {
  // Every name that can be a folder has one, so a refusal below is the rule's, not a missing home.
  root = mkdtempSync(path.join(os.tmpdir(), 'conduit-profile-names-'));
  for (const [name] of NAMES) {
    if (!name.includes('/') && !name.includes('\\') && name !== '..') {
      mkdirSync(path.join(root, 'profiles', name), { recursive: true });
    }
  }
  empty = mkdtempSync(path.join(os.tmpdir(), 'conduit-profile-empty-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(empty, { recursive: true, force: true });
});

/** Whether each resolver accepts the name, told by the refusal it answers with (every valid name has a home). */
function verdicts(name: string): Record<string, boolean> {
  return {
    contract: isProfileName(name),
    // ?profile= on the plugin routes and MCP, and a hook's `profile`.
    pluginRoutes: !/not valid/.test(failure(() => resolveProfile(root, name))),
    // --profile of `conduit push` and `conduit hook`.
    hermesHome: !/not a profile name/.test(failure(() => resolveProfileHome({ root, profile: name, env: {} }))),
    // --profile of the messenger.
    messenger: !/invalid profile name/.test(failure(() => profileHome({ HERMES_HOME: root }, name))),
  };
}

/** The text a resolver fails with, or '' when it resolves. */
function failure(resolve: () => unknown): string {
  try {
    resolve();
    return '';
  } catch (error) {
    if (error instanceof WireError) return `${error.code}: ${String(error.extra.detail)}`;
    return error instanceof Error ? error.message : String(error);
  }
}

describe('one profile-name rule', () => {
  it.each(NAMES)('%j accepted: %s, by every resolver', (name, accepted) => {
    expect(verdicts(name)).toEqual({
      contract: accepted,
      pluginRoutes: accepted,
      hermesHome: accepted,
      messenger: accepted,
    });
  });

  it('every name the rule accepts resolves to its own folder under profiles/', () => {
    for (const [name, accepted] of NAMES) {
      if (!accepted) continue;
      const home = path.join(root, 'profiles', name);
      expect(resolveProfile(root, name)).toEqual({ name, home });
      expect(resolveProfileHome({ root, profile: name, env: {} })).toEqual({ home, profile: name });
      expect(profileHome({ HERMES_HOME: root }, name)).toBe(home);
    }
  });

  it('setup-hermes refuses exactly the names the rule refuses', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      for (const [name, accepted] of NAMES) {
        stderr.mockClear();
        const code = await setupHermes(['--home', empty, '--state', path.join(empty, 'state'), '--profile', name]);
        const said = stderr.mock.calls.map((call) => String(call[0])).join('');
        // An accepted name gets as far as looking for its home, which this empty root does not have.
        expect([name, code, said.startsWith('Invalid profile name')]).toEqual(
          accepted ? [name, 1, false] : [name, 2, true],
        );
      }
    } finally {
      stderr.mockRestore();
    }
  });
});
