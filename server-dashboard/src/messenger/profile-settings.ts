/**
 * Where a profile's settings come from: the process environment first, then the profile's `.env`
 * (where the Relay CLI writes RELAY_AGENT_TOKEN and friends), then `gateway.platforms.relayapp.extra`
 * in its config.yaml. A secondary profile never falls through to another profile's files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { parseDotenv } from '../kernel/profile-files.js';
import type { ProfileExtra } from './config.js';

export function profileHome(env: NodeJS.ProcessEnv, profile: string | null): string {
  const root = env['HERMES_HOME'] ?? path.join(os.homedir(), '.hermes');
  if (profile === null || profile === 'default') return root;
  if (!isProfileName(profile)) throw new Error(`invalid profile name: ${profile}`);
  return path.join(root, 'profiles', profile);
}

/** One `.env` reader for the whole service (kernel/profile-files.ts). */
export { parseDotenv };

export function loadProfileSettings(
  env: NodeJS.ProcessEnv,
  home: string,
): { env: NodeJS.ProcessEnv; extra: ProfileExtra } {
  let fileEnv: Record<string, string> = {};
  try {
    fileEnv = parseDotenv(fs.readFileSync(path.join(home, '.env'), 'utf8'));
  } catch {
    fileEnv = {};
  }
  let extra: ProfileExtra = {};
  try {
    const doc: unknown = parseYaml(fs.readFileSync(path.join(home, 'config.yaml'), 'utf8'));
    const e = (doc as { gateway?: { platforms?: { relayapp?: { extra?: unknown } } } } | null)?.gateway?.platforms
      ?.relayapp?.extra;
    if (typeof e === 'object' && e !== null && !Array.isArray(e)) extra = e as ProfileExtra;
  } catch {
    extra = {};
  }
  return { env: { ...fileEnv, ...env }, extra };
}
