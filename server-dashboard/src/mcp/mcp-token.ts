import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * `<state dir>/mcp-token`: the bearer token Hermes presents to this service's MCP endpoint. Unlike the
 * hook token it survives restarts, because `conduit setup-hermes` writes it into the profile's
 * `mcp_servers` entry once. Created by whichever of the service and setup-hermes needs it first;
 * mode 0600 in a 0700 folder.
 */
export const MCP_TOKEN_FILE = 'mcp-token';

const TOKEN = /^[A-Za-z0-9_-]{32,128}$/;

export function mcpTokenPath(stateDir: string): string {
  return path.join(stateDir, MCP_TOKEN_FILE);
}

async function readToken(file: string): Promise<string | null> {
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (!TOKEN.test(token)) throw new Error(`${file} does not hold a token; move it away to make a new one`);
    return token;
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT') return null;
    throw error;
  }
}

export async function readOrCreateMcpToken(stateDir: string): Promise<string> {
  const file = mcpTokenPath(stateDir);
  const existing = await readToken(file);
  if (existing) return existing;
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  try {
    // Exclusive create: when the service and setup-hermes race, one token wins and both read it.
    await writeFile(file, token + '\n', { mode: 0o600, flag: 'wx' });
    await chmod(file, 0o600);
    return token;
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST') {
      const winner = await readToken(file);
      if (winner) return winner;
    }
    throw error;
  }
}
