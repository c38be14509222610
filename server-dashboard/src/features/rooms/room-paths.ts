import { lstat, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { DetailError } from '../../kernel/detail-errors.js';

/**
 * Names and folders of the rooms' storage under `<hermes home>/conduit/`. Every name a caller gives is
 * checked to be a plain name before anything is touched, and every folder is resolved (symlinks
 * included) and checked to stay inside the Hermes home before anything is written into it.
 */

/** Characters a file system or Hermes' `@file:` parser would trip on, replaced in a stored name. */
const AWKWARD_CHARACTERS = /[<>:"|?*`]/g;
// eslint-disable-next-line no-control-regex -- exactly the C0 controls and DEL, NUL included
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
/** A stored name's longest form, in characters; the extension is kept when a name is cut. */
const NAME_MAX_CHARS = 120;
const EXTENSION_MAX_CHARS = 16;

export const PLAIN_NAME_REFUSAL = 'name must be a plain file name, not a path';
export const ROOM_ID_REFUSAL = 'Unknown room id';

/**
 * The value and what it says once percent-decoded (up to three times, for double encodings): a name
 * that only decodes to a path is still a path to whoever decodes it next.
 */
function spellings(value: string): string[] {
  const out = [value];
  let current = value;
  for (let i = 0; i < 3 && current.includes('%'); i += 1) {
    try {
      const decoded = decodeURIComponent(current);
      if (decoded === current) break;
      out.push(decoded);
      current = decoded;
    } catch {
      break;
    }
  }
  return out;
}

/** Whether any spelling of `value` is a path, a dot segment, or carries a NUL or control character. */
function isPathLike(value: string): boolean {
  return spellings(value).some((spelling) => {
    const trimmed = spelling.trim();
    return (
      spelling.includes('/') ||
      spelling.includes('\\') ||
      CONTROL_CHARACTERS.test(spelling) ||
      trimmed === '.' ||
      trimmed === '..' ||
      /^[A-Za-z]:/.test(trimmed)
    );
  });
}

/**
 * A room file's stored name from the name the app sends: refused (400) when it is a path in any
 * spelling; otherwise cleaned — awkward characters replaced, no leading dots (no hidden files),
 * whitespace collapsed, at most 120 characters with its extension kept.
 */
export function roomFileName(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new DetailError(400, 'name is required');
  if (raw.length > 255) throw new DetailError(400, 'name is longer than 255 characters');
  if (isPathLike(raw)) throw new DetailError(400, PLAIN_NAME_REFUSAL);
  let name = raw
    .normalize('NFC')
    .replace(AWKWARD_CHARACTERS, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '');
  if (name === '') name = 'file';
  if (name.length > NAME_MAX_CHARS) {
    const extension = path.extname(name);
    const keep = extension.length > 1 && extension.length <= EXTENSION_MAX_CHARS ? extension : '';
    name = `${name.slice(0, NAME_MAX_CHARS - keep.length).trimEnd()}${keep}`;
  }
  return name;
}

/**
 * A room id from the URL: never a path in any spelling, else 400. Fastify's router answers 414 to a
 * path parameter over 100 characters before the route runs (its maxParamLength), which bounds the id.
 */
export function roomId(raw: string): string {
  if (raw.length === 0 || raw.trim() === '' || isPathLike(raw)) {
    throw new DetailError(400, ROOM_ID_REFUSAL);
  }
  return raw;
}

/** A folder this feature would write into leads outside the Hermes home (a symlink), or is not a folder. */
export class FolderOutsideHome extends DetailError {
  constructor(folder: string) {
    super(400, `The ${folder} folder leads outside this Hermes home; nothing was written`);
    this.name = 'FolderOutsideHome';
  }
}

export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

async function lstatOrNull(file: string) {
  try {
    return await lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * `<home>/<segments…>` resolved to its real path, each step checked before the next is touched: a
 * symlink must lead inside the home's real path, a missing folder is made (0700) only once its
 * parent is known to be inside. With `create` false a missing folder answers null instead.
 */
export async function folderInsideHome(
  home: string,
  segments: readonly string[],
  create: boolean,
): Promise<string | null> {
  const realHome = await realpath(home);
  const label = segments.join('/');
  let current = realHome;
  for (const segment of segments) {
    const next = path.join(current, segment);
    let info = await lstatOrNull(next);
    if (!info) {
      if (!create) return null;
      await mkdir(next, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      info = await lstat(next);
    }
    if (info.isSymbolicLink()) {
      const target = await realpath(next).catch(() => null);
      if (target === null) {
        if (!create) return null;
        throw new FolderOutsideHome(label);
      }
      if (!isInside(realHome, target)) throw new FolderOutsideHome(label);
      current = target;
    } else if (info.isDirectory()) {
      current = next;
    } else {
      throw new FolderOutsideHome(label);
    }
  }
  return current;
}
