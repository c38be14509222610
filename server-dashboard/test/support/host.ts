import path from 'node:path';
import { buildHost, type Host, type HostDeps } from '../../src/app.js';
import { writeRuntimeFile } from '../../src/bridge/runtime-file.js';
import type { HostConfig } from '../../src/config.js';

/** A listening host service with its runtime file written, as `npm run host` leaves it. */
export async function startHost(config: HostConfig, deps: Partial<HostDeps> = {}): Promise<Host & { url: string }> {
  const host = await buildHost(config, deps);
  const url = await host.app.listen({ host: '127.0.0.1', port: 0 });
  await writeRuntimeFile(config.stateDir, { url, token: host.hookToken, pid: process.pid });
  return { ...host, url };
}

export function stateDirOf(root: string): string {
  return path.join(root, 'conduit-host');
}
