import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { configSection } from '../profile-files.js';

/** Hermes' built-in store separates entries with a `§` line. */
const ENTRY_DELIMITER = '§';
const RULE = '═'.repeat(46);

/** What `memory:` in config.yaml says about memory (Hermes' defaults when absent). */
export interface MemorySettings {
  memoryEnabled: boolean;
  userProfileEnabled: boolean;
  /** The built-in store's capacities, shown in its block header (Hermes' defaults 2,200 and 1,375). */
  memoryCharLimit: number;
  userCharLimit: number;
  /** The external provider `memory.provider` names (Honcho, Mem0, …), if any. */
  externalProvider: string | null;
}

function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : fallback;
}

export function memorySettings(config: Record<string, unknown>): MemorySettings {
  const memory = configSection(config, 'memory');
  const provider = typeof memory.provider === 'string' ? memory.provider.trim() : '';
  return {
    memoryEnabled: flag(memory.memory_enabled, true),
    userProfileEnabled: flag(memory.user_profile_enabled, true),
    memoryCharLimit: positive(memory.memory_char_limit, 2200),
    userCharLimit: positive(memory.user_char_limit, 1375),
    externalProvider: provider && provider !== 'builtin' ? provider : null,
  };
}

/** MEMORY.md and USER.md hold the whole store; a file larger than this is not Hermes' and is read cut. */
const FILE_READ_LIMIT = 256 * 1024;

async function readEntries(file: string): Promise<string[]> {
  let raw: string;
  try {
    raw = (await readFile(file, 'utf8')).slice(0, FILE_READ_LIMIT);
  } catch {
    return [];
  }
  return raw
    .split(ENTRY_DELIMITER)
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** One block as Hermes puts it in its system prompt: a ruled header with the store's use, then the entries. */
function renderBlock(title: string, entries: string[], limit: number): string {
  if (entries.length === 0) return '';
  const content = entries.join(`\n${ENTRY_DELIMITER}\n`);
  const percent = Math.min(100, Math.floor((content.length / limit) * 100));
  const usage = `[${percent}% — ${content.length.toLocaleString('en-US')}/${limit.toLocaleString('en-US')} chars]`;
  return `${RULE}\n${title} ${usage}\n${RULE}\n${content}`;
}

/**
 * The built-in MEMORY.md / USER.md snapshot (in `<home>/memories/`), each block only when its store is
 * enabled, joined by a blank line: what Hermes itself puts in the system prompt at session start.
 */
export async function builtinMemorySnapshot(home: string, settings: MemorySettings): Promise<string> {
  const folder = path.join(home, 'memories');
  const blocks: string[] = [];
  if (settings.memoryEnabled) {
    const entries = await readEntries(path.join(folder, 'MEMORY.md'));
    blocks.push(renderBlock('MEMORY (your personal notes)', entries, settings.memoryCharLimit));
  }
  if (settings.userProfileEnabled) {
    const entries = await readEntries(path.join(folder, 'USER.md'));
    blocks.push(renderBlock('USER PROFILE (who the user is)', entries, settings.userCharLimit));
  }
  return blocks.filter(Boolean).join('\n\n');
}
