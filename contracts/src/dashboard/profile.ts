import { z } from 'zod';

/**
 * A Hermes profile name, exactly as Hermes decides it (`_PROFILE_ID_RE` in hermes_cli/profiles.py):
 * lowercase letters, digits, `_` and `-`, starting with a letter or a digit, at most 64 characters.
 * A named profile lives in `<home>/profiles/<name>/`, so this rule is also what keeps a name from
 * leaving that folder (`..`, `a/b`, `.hidden`). `default` matches too; it names the root home.
 * Hermes itself never creates another name, so one that breaks the rule names no profile.
 */
export const PROFILE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function isProfileName(name: string): boolean {
  return PROFILE_NAME_PATTERN.test(name);
}

/**
 * `?profile=<name>` on the plugin routes (and on the host's MCP endpoint). The query takes any text
 * up to 64 characters, as the reference plugin's routes do: absent, empty, `default` or `current` is
 * the root home, and a name that breaks PROFILE_NAME_PATTERN or has no home is a profile that cannot
 * be resolved (503), never a fallback to another profile.
 */
export const profileQuery = z.object({
  profile: z.string().max(64).optional(),
});
