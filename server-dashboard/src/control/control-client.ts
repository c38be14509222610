import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createTRPCClient, httpLink, TRPCClientError, type TRPCClient } from '@trpc/client';
import { HOST_CONTROL_PREFIX } from '@conduit/contracts/dashboard/control';
import { RUNTIME_FILE } from '../bridge/runtime-file.js';
import { isLoopbackHost } from '../kernel/loopback.js';
import type { HostControlRouter } from './control-router.js';
import { readControlToken } from './control-token.js';

export type HostControlClient = TRPCClient<HostControlRouter>;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return typeof error === 'object' && error !== null && 'code' in error && error.code === 'EPERM';
  }
}

/**
 * The control API of the service running for this Hermes root, found as the hook bridge finds it
 * (`<state dir>/runtime.json`, written on each boot, with a live pid), or null when none runs: then
 * the CLI works on the files itself. Only a loopback URL: the token never leaves this machine.
 */
export async function runningServiceControl(
  hermesRoot: string,
  env: NodeJS.ProcessEnv,
): Promise<HostControlClient | null> {
  const stateDir = path.resolve(env.CONDUIT_STATE_DIR?.trim() || path.join(hermesRoot, 'conduit-host'));
  let runtime: { url?: unknown; pid?: unknown };
  try {
    runtime = JSON.parse(await readFile(path.join(stateDir, RUNTIME_FILE), 'utf8')) as typeof runtime;
  } catch {
    return null;
  }
  if (typeof runtime.url !== 'string' || typeof runtime.pid !== 'number' || !isAlive(runtime.pid)) return null;
  let url: URL;
  try {
    url = new URL(HOST_CONTROL_PREFIX, runtime.url);
  } catch {
    return null;
  }
  if (!isLoopbackHost(url.hostname)) return null;
  const token = await readControlToken(stateDir).catch(() => null);
  if (!token) return null;
  return createTRPCClient<HostControlRouter>({
    links: [httpLink({ url: url.href, headers: { authorization: `Bearer ${token}` } })],
  });
}

/** The Hermes root a profile home belongs to (`<root>/profiles/<name>` or the root itself). */
export function hermesRootOf(location: { home: string; profile: string }): string {
  return location.profile === 'default' ? location.home : path.dirname(path.dirname(location.home));
}

/** The running service refused or failed a call; its message is what the CLI prints (exit 1). */
export class ServiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServiceError';
  }
}

/** The request never reached the service (it stopped after its runtime file was read). */
function neverReached(error: TRPCClientError<HostControlRouter>): boolean {
  // undici fails with TypeError('fetch failed') caused by the socket's error.
  const socket: unknown = error.cause instanceof Error ? error.cause.cause : undefined;
  return typeof socket === 'object' && socket !== null && 'code' in socket && socket.code === 'ECONNREFUSED';
}

/**
 * One `conduit …` action: through the control API of the service running for the profile's Hermes
 * root, which owns the state files, or `local` on the files themselves when none runs (or it stopped
 * before the request reached it). What the service answers with an error is a ServiceError.
 */
export async function throughService<T>(
  location: { home: string; profile: string },
  env: NodeJS.ProcessEnv,
  remote: (api: HostControlClient) => Promise<T>,
  local: () => Promise<T>,
): Promise<T> {
  const api = await runningServiceControl(hermesRootOf(location), env);
  if (!api) return local();
  try {
    return await remote(api);
  } catch (error) {
    if (!(error instanceof TRPCClientError)) throw error;
    const failure = error as TRPCClientError<HostControlRouter>;
    if (neverReached(failure)) return local();
    // A service started before this command knew the procedure: it still owns the files, so say how
    // to bring it up to date rather than write them behind its back.
    if (failure.data?.code === 'NOT_FOUND' && /no procedure/i.test(failure.message)) {
      throw new ServiceError(
        'The running Conduit host service is older than this command and cannot do this yet; restart it, then try again.',
      );
    }
    throw new ServiceError(failure.message);
  }
}
