/**
 * Where a profile's settings come from. The primary (default) profile reads the process environment
 * first, then its `.env` (where the Relay CLI writes RELAY_AGENT_TOKEN and friends), then
 * `gateway.platforms.relayapp.extra` in its config.yaml. A secondary profile's own scope is
 * authoritative (relay-messenger-adapter seed): its `.env` wins over the process environment, and the
 * profile-scoped settings (RELAY_*, API_SERVER_*, HERMES_API_URL/KEY) are never taken from the process
 * environment at all, so `--profile work` started from a shell that exported the primary account's
 * token can never bind to it. A secondary profile never falls through to another profile's files.
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

/** Settings that belong to one profile's scope: a secondary profile reads them only from its own files. */
export function isProfileScoped(name: string): boolean {
  return (
    name.startsWith('RELAY_') ||
    name.startsWith('API_SERVER_') ||
    name === 'HERMES_API_URL' ||
    name === 'HERMES_API_KEY'
  );
}

/** Whether a `--profile` / HERMES_PROFILE value names a secondary profile (anything but the root home). */
export function isSecondaryProfile(profile: string | null): boolean {
  return profile !== null && profile !== 'default';
}

export function loadProfileSettings(
  env: NodeJS.ProcessEnv,
  home: string,
  secondary = false,
): { env: NodeJS.ProcessEnv; extra: ProfileExtra; display: { busy_input_mode?: unknown } } {
  let fileEnv: Record<string, string> = {};
  try {
    fileEnv = parseDotenv(fs.readFileSync(path.join(home, '.env'), 'utf8'));
  } catch {
    fileEnv = {};
  }
  let extra: ProfileExtra = {};
  let display: { busy_input_mode?: unknown } = {};
  try {
    const doc = parseYaml(fs.readFileSync(path.join(home, 'config.yaml'), 'utf8')) as {
      gateway?: { platforms?: { relayapp?: { extra?: unknown } } };
      display?: unknown;
    } | null;
    const e = doc?.gateway?.platforms?.relayapp?.extra;
    if (typeof e === 'object' && e !== null && !Array.isArray(e)) extra = e as ProfileExtra;
    // Hermes' display settings are global, not per platform: busy_input_mode is read from there.
    const d = doc?.display;
    if (typeof d === 'object' && d !== null && !Array.isArray(d)) {
      const mode = (d as { busy_input_mode?: unknown }).busy_input_mode;
      if (typeof mode === 'string') display = { busy_input_mode: mode };
    }
  } catch {
    extra = {};
  }
  if (!secondary) return { env: { ...fileEnv, ...env }, extra, display };
  const outside: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (!isProfileScoped(name)) outside[name] = value;
  return { env: { ...outside, ...fileEnv }, extra, display };
}
