import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * `<state dir>/control-token`: the bearer `conduit …` presents to the control API of the running
 * service. Its own secret, never the standalone bearer (which the phone holds): it opens only the
 * loopback control API. Survives restarts; created 0600 in a 0700 folder by whichever of the service
 * and the CLI needs it first, as the MCP token is.
 */
export const CONTROL_TOKEN_FILE = 'control-token';

const TOKEN = /^[A-Za-z0-9_-]{32,128}$/;

function isMissing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';
}

export async function readControlToken(stateDir: string): Promise<string | null> {
  const file = path.join(stateDir, CONTROL_TOKEN_FILE);
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (!TOKEN.test(token)) throw new Error(`${file} does not hold a token; move it away to make a new one`);
    return token;
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

export async function readOrCreateControlToken(stateDir: string): Promise<string> {
  const existing = await readControlToken(stateDir);
  if (existing) return existing;
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, CONTROL_TOKEN_FILE);
  try {
    // Exclusive create: when two processes race, one token wins and both read it.
    await writeFile(file, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
    await chmod(file, 0o600);
  } catch (error) {
    if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST')) throw error;
  }
  const token = await readControlToken(stateDir);
  if (!token) throw new Error(`${file} could not be created`);
  return token;
}
