import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { isProfileName } from '@conduit/contracts/dashboard/profile';

/**
 * Where a Hermes profile keeps its files (spec/hermes/SURFACES.md §4): the root home is `$HERMES_HOME`
 * or `~/.hermes`; the `default` profile is the root itself; a named profile is `<root>/profiles/<name>`.
 * `hermes -p NAME` runs with HERMES_HOME already pointing at the profile's home, so a command started
 * by Hermes (a hook, a CLI call) lands in the right profile without flags.
 */
export const DEFAULT_PROFILE = 'default';

export class ProfileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProfileError';
  }
}

export interface HomeLocation {
  /** The profile's home directory (absolute). */
  home: string;
  /** The profile's name (`default` for the root home). */
  profile: string;
}

export interface HomeQuery {
  /** An explicit root home (`--home DIR`); overrides the environment. */
  root?: string;
  /** A profile name (`--profile NAME`, `?profile=`); absent means the active profile. */
  profile?: string;
  env?: NodeJS.ProcessEnv;
  userHome?: string;
}

/** Resolves a profile's home. A named profile must exist: we never fall back to another profile. */
export function resolveProfileHome(query: HomeQuery = {}): HomeLocation {
  const env = query.env ?? process.env;
  const envHome = env.HERMES_HOME?.trim() ? resolve(env.HERMES_HOME.trim()) : undefined;
  if (query.root && !isDirectory(resolve(query.root))) {
    // An explicit --home is the user's statement of where Hermes lives: a typo must not look like an
    // unpaired profile (or create files in a folder nobody meant).
    throw new ProfileError(`There is no Hermes home at ${resolve(query.root)} (--home)`);
  }
  const root = query.root
    ? resolve(query.root)
    : envHome
      ? rootOf(envHome)
      : join(query.userHome ?? homedir(), '.hermes');
  const requested = query.profile?.trim();
  if (!requested) {
    // No profile named: HERMES_HOME (set by `hermes -p`) is the active home; otherwise the sticky default.
    if (!query.root && envHome) return { home: envHome, profile: profileNameOf(envHome) };
    const sticky = readActiveProfile(root);
    if (sticky && sticky !== DEFAULT_PROFILE) return namedProfile(root, sticky);
    return { home: root, profile: DEFAULT_PROFILE };
  }
  if (requested === DEFAULT_PROFILE || requested === 'current') {
    if (requested === 'current' && !query.root && envHome) return { home: envHome, profile: profileNameOf(envHome) };
    return { home: root, profile: DEFAULT_PROFILE };
  }
  return namedProfile(root, requested);
}

function namedProfile(root: string, name: string): HomeLocation {
  if (!isProfileName(name)) throw new ProfileError(`"${name.slice(0, 64)}" is not a profile name`);
  const home = join(root, 'profiles', name);
  if (!isDirectory(home)) throw new ProfileError(`The Hermes profile "${name}" does not exist (${home})`);
  return { home, profile: name };
}

/** `<root>/profiles/<name>` → `<root>`; any other home is a root of its own. */
function rootOf(home: string): string {
  return basename(dirname(home)) === 'profiles' && isProfileName(basename(home)) ? dirname(dirname(home)) : home;
}

function profileNameOf(home: string): string {
  return basename(dirname(home)) === 'profiles' && isProfileName(basename(home)) ? basename(home) : DEFAULT_PROFILE;
}

function readActiveProfile(root: string): string | null {
  try {
    const name = readFileSync(join(root, 'active_profile'), 'utf8').trim();
    return name && isProfileName(name) ? name : null;
  } catch {
    return null;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
