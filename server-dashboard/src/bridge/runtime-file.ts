import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * `<state dir>/runtime.json`: where the running service listens and the hook token of this boot.
 * The hook bridge reads it on every hook; without it (service not running) the hook exits at once.
 * Mode 0600 in a 0700 folder: the token lets a process inject hook events.
 */
export const RUNTIME_FILE = 'runtime.json';

export interface RuntimeInfo {
  url: string;
  token: string;
  pid: number;
}

export async function writeRuntimeFile(stateDir: string, info: RuntimeInfo): Promise<string> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, RUNTIME_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(info) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
  return file;
}

export async function removeRuntimeFile(stateDir: string): Promise<void> {
  await rm(path.join(stateDir, RUNTIME_FILE), { force: true });
}
