import { statSync } from 'node:fs';
import path from 'node:path';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { WireError } from '@conduit/contracts/server';
import type { ProfileScope } from '../notifier/notifier.js';

/**
 * `?profile=<name>` → `<home>/profiles/<name>`. Absent, empty, `default` or `current` is the root
 * home. A name that is malformed or has no home answers 503: acting on the default profile instead
 * would read or change the wrong profile's settings and credential.
 */
export function resolveProfile(root: string, requested: string | undefined): ProfileScope {
  const name = requested?.trim() ?? '';
  if (!name || name === 'default' || name === 'current') return { name: 'default', home: root };
  if (!isProfileName(name)) {
    throw new WireError(503, 'profile_unavailable', { detail: 'This profile name is not valid on this host' });
  }
  const home = path.join(root, 'profiles', name);
  try {
    if (statSync(home).isDirectory()) return { name, home };
  } catch {
    // fall through
  }
  throw new WireError(503, 'profile_unavailable', { detail: `Profile ${name} does not exist on this host` });
}

/** The profile a hook event belongs to, or null when its home does not exist (the event is dropped). */
export function profileOfHook(root: string, profile: string | null | undefined): ProfileScope | null {
  try {
    return resolveProfile(root, profile ?? undefined);
  } catch {
    return null;
  }
}
