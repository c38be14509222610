import { rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../credentials/atomic-write.js';
import { HOOK_PATH, HOOK_TOKEN_HEADER } from '../routes/hooks.js';

/**
 * `<state dir>/runtime.json`: where the running service listens and the hook token of this boot.
 * The Node bridge reads it on every hook; without it (service not running) the hook exits at once.
 * `<state dir>/runtime.curl` says the same to the sh bridge as a curl config file, so the token
 * reaches curl through a file, never through a command line others can read in `ps`.
 * Both mode 0600 in a 0700 folder: the token lets a process inject hook events.
 */
export const RUNTIME_FILE = 'runtime.json';
export const RUNTIME_CURL_FILE = 'runtime.curl';

export interface RuntimeInfo {
  url: string;
  token: string;
  pid: number;
}

/** A curl config string: double-quoted, with the escapes curl's config parser knows. */
function curlQuoted(value: string): string {
  if (/[\r\n\0]/.test(value)) throw new Error('runtime value with a line break');
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export function curlConfig(info: RuntimeInfo): string {
  const url = new URL(HOOK_PATH, info.url).href;
  return [
    '# Written by the Conduit host service on each boot, for bin/conduit-hook.sh. Mode 0600.',
    `url = ${curlQuoted(url)}`,
    `header = ${curlQuoted(`${HOOK_TOKEN_HEADER}: ${info.token}`)}`,
    '',
  ].join('\n');
}

export async function writeRuntimeFile(stateDir: string, info: RuntimeInfo): Promise<string> {
  await writeFileAtomic(path.join(stateDir, RUNTIME_CURL_FILE), curlConfig(info));
  const file = path.join(stateDir, RUNTIME_FILE);
  await writeFileAtomic(file, JSON.stringify(info) + '\n');
  return file;
}

export async function removeRuntimeFile(stateDir: string): Promise<void> {
  await rm(path.join(stateDir, RUNTIME_FILE), { force: true });
  await rm(path.join(stateDir, RUNTIME_CURL_FILE), { force: true });
}
