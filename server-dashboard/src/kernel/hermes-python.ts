import { accessSync, closeSync, constants, openSync, readSync } from 'node:fs';
import path from 'node:path';

/**
 * Hermes' Python: `CONDUIT_HERMES_PYTHON`, else the interpreter of the `hermes` command on PATH (its
 * `#!` line, as pip and uv write it). Null when neither exists: what needs Hermes' own code (memory
 * recall, the end of a saved voice call) then does not run.
 */
export function hermesPython(env: Readonly<Record<string, string | undefined>>): string | null {
  const configured = env.CONDUIT_HERMES_PYTHON?.trim();
  if (configured) return configured;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'hermes');
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    const interpreter = shebangOf(candidate);
    if (interpreter) return interpreter;
  }
  return null;
}

/** The absolute interpreter of a script's `#!` line (`#!/usr/bin/env python3` is not Hermes' own venv). */
function shebangOf(file: string): string | null {
  const buffer = Buffer.alloc(512);
  let length = 0;
  try {
    const fd = openSync(file, 'r');
    try {
      length = readSync(fd, buffer, 0, buffer.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  const first = buffer.subarray(0, length).toString('utf8').split('\n', 1)[0] ?? '';
  const match = /^#!\s*(\/\S+python[0-9.]*)\s*$/.exec(first);
  return match?.[1] ?? null;
}

/**
 * The environment of a child that runs Hermes' Python for a profile: `HERMES_HOME` and what Python needs
 * (PATH, HOME, locale, TZ). Never this service's tokens or keys; Hermes' code reads the profile's own
 * `.env` itself, as Hermes does.
 */
export function childEnvironment(home: string): Record<string, string> {
  const env: Record<string, string> = { HERMES_HOME: home, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' };
  for (const name of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
