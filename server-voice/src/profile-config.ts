import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/**
 * The Hermes profile's `config.yaml` (SURFACES.md §4: `$HERMES_HOME/config.yaml`, `~/.hermes/config.yaml` for
 * the default profile), read for the few keys the gateway honours as a native Hermes platform would:
 * `display.platforms.realtime.streaming`, `streaming.enabled`, `tts.streaming.completion_timeout` and
 * `platforms.realtime.enabled` (and Conference mode's `platform_toolsets.livekit`). Parsed as YAML 1.1, as Hermes' PyYAML reads it (`yes`/`off` are booleans);
 * `get` does not read lists (a key inside one is simply not found, and the gateway uses its default; `list` reads
 * a list of scalars such as `platform_toolsets.livekit`), and a file
 * that is not valid YAML is read as empty.
 */
export interface ProfileConfig {
  /** The file the values came from (named in error messages, so a bad value can be found). */
  readonly file: string;
  /** The value at a dotted path (`tts.streaming.completion_timeout`), or undefined when the file has none. */
  get(keyPath: string): ProfileValue | undefined;
  /**
   * The list at a dotted path (`platform_toolsets.livekit`) as its scalar entries (nested collections are left
   * out), or undefined when the path holds no list.
   */
  list(keyPath: string): ProfileScalar[] | undefined;
}

/** A scalar as YAML 1.1 (PyYAML) reads it; `null` also stands for a skipped collection or block scalar. */
export type ProfileScalar = string | number | boolean | null;
export type ProfileValue = ProfileScalar | ProfileMapping;
export interface ProfileMapping {
  [key: string]: ProfileValue;
}

/**
 * The profile's home as Hermes finds it: `HERMES_HOME`, else `~/.hermes` (the default profile). Only the
 * given environment is read (not the process's home directory), so a test's environment decides alone.
 */
export function hermesHome(env: NodeJS.ProcessEnv): string | null {
  const home = env.HERMES_HOME?.trim();
  if (home) return path.resolve(home);
  const user = env.HOME?.trim();
  return user ? path.join(user, '.hermes') : null;
}

/** The profile's config.yaml, or null when the profile has none (a gateway running without Hermes). */
export function readProfileConfig(env: NodeJS.ProcessEnv): ProfileConfig | null {
  const home = hermesHome(env);
  if (!home) return null;
  const file = path.join(home, 'config.yaml');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  return profileConfigFromText(text, file);
}

export function profileConfigFromText(text: string, file: string): ProfileConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text, { version: '1.1' });
  } catch {
    doc = null;
  }
  const root = toProfileValue(doc);
  return {
    file,
    list(keyPath) {
      let value: unknown = doc;
      for (const key of keyPath.split('.')) {
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
        value = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
      }
      if (!Array.isArray(value)) return undefined;
      return value.filter(
        (entry): entry is ProfileScalar =>
          entry === null || typeof entry === 'string' || typeof entry === 'number' || typeof entry === 'boolean',
      );
    },
    get(keyPath) {
      let value: ProfileValue | undefined = root;
      for (const key of keyPath.split('.')) {
        if (value === null || typeof value !== 'object') return undefined;
        value = Object.hasOwn(value, key) ? value[key] : undefined;
      }
      return value;
    },
  };
}

/** Mappings without a prototype, so a key such as `__proto__` is only a key. */
const newMapping = (): ProfileMapping => Object.create(null) as ProfileMapping;

/** The parsed document as mappings and scalars; lists (and anything else) read as null. */
function toProfileValue(value: unknown): ProfileValue {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const mapping = newMapping();
  for (const [key, entry] of Object.entries(value)) mapping[key] = toProfileValue(entry);
  return mapping;
}
