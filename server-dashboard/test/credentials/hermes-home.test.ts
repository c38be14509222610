import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProfileError, resolveProfileHome } from '../../src/credentials/hermes-home.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'conduit-home-'));
  await mkdir(join(root, 'profiles', 'coder'), { recursive: true });
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe('locating a Hermes profile home', () => {
  it('defaults to ~/.hermes, the default profile being the root', () => {
    expect(resolveProfileHome({ env: {}, userHome: '/home/ada' })).toEqual({
      home: '/home/ada/.hermes',
      profile: 'default',
    });
  });

  it('HERMES_HOME is the active home; a profile home set by `hermes -p` names its profile', () => {
    expect(resolveProfileHome({ env: { HERMES_HOME: root } })).toEqual({ home: root, profile: 'default' });
    const coder = join(root, 'profiles', 'coder');
    expect(resolveProfileHome({ env: { HERMES_HOME: coder } })).toEqual({ home: coder, profile: 'coder' });
    // --profile from inside a profile's environment is resolved against the same root.
    expect(resolveProfileHome({ env: { HERMES_HOME: coder }, profile: 'default' })).toEqual({
      home: root,
      profile: 'default',
    });
  });

  it('--home with --profile NAME is <home>/profiles/NAME; an unknown or malformed name is an error, never a fallback', () => {
    expect(resolveProfileHome({ root, profile: 'coder', env: {} })).toEqual({
      home: join(root, 'profiles', 'coder'),
      profile: 'coder',
    });
    expect(() => resolveProfileHome({ root, profile: 'ghost', env: {} })).toThrow(ProfileError);
    expect(() => resolveProfileHome({ root, profile: '../etc', env: {} })).toThrow(/not a profile name/);
  });

  it('without a profile, the sticky active_profile is used', async () => {
    await writeFile(join(root, 'active_profile'), 'coder\n');
    expect(resolveProfileHome({ root, env: {} })).toEqual({ home: join(root, 'profiles', 'coder'), profile: 'coder' });
    expect(resolveProfileHome({ root, profile: 'default', env: {} })).toEqual({ home: root, profile: 'default' });
  });
});
