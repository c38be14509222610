import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hermesHome } from './profile-config.js';

/**
 * The Hermes profile's `.env` (`$HERMES_HOME/.env`), where Hermes keeps its provider keys
 * (`VOICE_TOOLS_OPENAI_KEY`, `OPENAI_API_KEY`, `GROQ_API_KEY`, …). Read as Hermes' dotenv loader reads it:
 * `NAME=value` lines, an optional `export `, `#` comments, one pair of surrounding quotes removed. The values
 * are secrets: nothing here logs them, and callers pass them only to the provider that needs them.
 */
export function parseDotenv(text: string): Record<string, string> {
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2] ?? '';
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
      value = value.slice(1, -1);
    } else {
      // An unquoted value ends at a comment that follows whitespace (`KEY=abc  # note`).
      value = value.replace(/\s+#.*$/, '');
    }
    values[match[1] as string] = value;
  }
  return values;
}

/**
 * A lookup of Hermes' own variables as a Hermes process of this profile sees them: the profile's `.env`
 * first (a profile's own secrets are authoritative), then the gateway's environment. Blank values count as
 * unset. A missing or unreadable `.env` is an empty one.
 */
export function profileVariables(env: NodeJS.ProcessEnv): (name: string) => string | undefined {
  const home = hermesHome(env);
  let fromFile: Record<string, string> = {};
  if (home) {
    try {
      fromFile = parseDotenv(readFileSync(path.join(home, '.env'), 'utf8'));
    } catch {
      fromFile = {};
    }
  }
  return (name) => {
    const value = (Object.hasOwn(fromFile, name) ? fromFile[name] : undefined)?.trim() || env[name]?.trim();
    return value ? value : undefined;
  };
}
