import { mkdir, readFile, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../credentials/atomic-write.js';

/**
 * The skills `conduit setup-hermes` installs in a profile's skills folder
 * (`skills/conduit/<name>/SKILL.md`), which the tools' descriptions point to. Hermes lists and loads
 * them like any installed skill. Each feature owns its skill's text; installing and removing them is
 * the same for all, here.
 */
export interface ConduitSkill {
  /** The skill's folder and frontmatter name (`calling-the-user`). */
  name: string;
  /** The whole SKILL.md, frontmatter first, carrying SKILL_MARKER. */
  text: string;
}

/** Marks the file as ours, so `--remove` never deletes a skill the user wrote under the same name. */
export const SKILL_MARKER = '<!-- installed by conduit setup-hermes; rewritten on each run -->';

export function skillPath(profileHome: string, name: string): string {
  return path.join(profileHome, 'skills', 'conduit', name, 'SKILL.md');
}

/** Writes the skill (0600 in 0700 folders); a user's own SKILL.md at that path is left alone. */
export async function installSkill(
  profileHome: string,
  skill: ConduitSkill,
): Promise<'installed' | 'unchanged' | 'foreign'> {
  const file = skillPath(profileHome, skill.name);
  const current = await readFile(file, 'utf8').catch(() => null);
  if (current === skill.text) return 'unchanged';
  if (current !== null && !current.includes(SKILL_MARKER)) return 'foreign';
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, skill.text);
  return 'installed';
}

/** Removes the skill when it is ours, and its folders when they are left empty. */
export async function removeSkill(profileHome: string, name: string): Promise<void> {
  const file = skillPath(profileHome, name);
  const current = await readFile(file, 'utf8').catch(() => null);
  if (current === null || !current.includes(SKILL_MARKER)) return;
  await rm(file, { force: true });
  for (const dir of [path.dirname(file), path.dirname(path.dirname(file))]) {
    await rmdir(dir).catch(() => undefined); // only when empty
  }
}
