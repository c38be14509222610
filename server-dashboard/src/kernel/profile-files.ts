import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { resolveProfile } from '../fronting/profiles.js';
import type { ProfileScope } from '../notifier/notifier.js';
import { DetailError } from './detail-errors.js';

/**
 * `?profile=` for the features' routes, answered in the dashboard's `{"detail"}` shape: 503 when the
 * name is malformed or has no home, never a fallback to the default profile (whose keys would then
 * serve another profile's caller).
 */
export function profileForRoute(hermesHome: string, requested: string | undefined): ProfileScope {
  try {
    return resolveProfile(hermesHome, requested);
  } catch (error) {
    const extra = (error as { extra?: { detail?: unknown } }).extra;
    const detail = typeof extra?.detail === 'string' ? extra.detail : "This Hermes profile can't be resolved";
    throw new DetailError(503, detail);
  }
}

/** Parses KEY=VALUE lines as Hermes' `.env` holds them (optional `export`, quotes, # comments). */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (m === null) continue;
    let value = m[2] ?? '';
    if ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'"))) {
      value = value.slice(1, -1);
    } else {
      value = value.replace(/\s+#.*$/, '');
    }
    out[m[1] ?? ''] = value;
  }
  return out;
}

/** A profile's settings as a feature reads them: its `.env` values and its parsed `config.yaml`. */
export interface ProfileFiles {
  /** A non-empty, trimmed value of the profile's environment, or undefined. */
  env(name: string): string | undefined;
  /** The parsed config.yaml (an empty object when missing or unreadable). */
  config: Record<string, unknown>;
}

async function readOptional(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * Reads a profile's `.env` and `config.yaml` afresh on every call, so an edited key takes effect at
 * once, as Hermes' `get_env_value` does. The default profile also falls back to the service's own
 * environment (how Hermes' dashboard process sees the root home's keys); a named profile never does,
 * so it cannot borrow the default profile's key.
 */
export async function readProfileFiles(
  profile: ProfileScope,
  serviceEnv: Readonly<Record<string, string | undefined>>,
): Promise<ProfileFiles> {
  const [envText, configText] = await Promise.all([
    readOptional(path.join(profile.home, '.env')),
    readOptional(path.join(profile.home, 'config.yaml')),
  ]);
  const fileEnv = envText === null ? {} : parseDotenv(envText);
  let config: Record<string, unknown> = {};
  try {
    config = configText === null ? {} : asRecord(parseYaml(configText));
  } catch {
    config = {};
  }
  const fallback = profile.name === 'default' ? serviceEnv : {};
  return {
    env: (name) => {
      const value = (fileEnv[name] ?? fallback[name])?.trim();
      return value ? value : undefined;
    },
    config,
  };
}

/** `config.yaml` section `name` as a record (empty when absent or not a mapping). */
export function configSection(config: Record<string, unknown>, name: string): Record<string, unknown> {
  return asRecord(config[name]);
}
