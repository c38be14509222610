import { buildHost } from './app.js';
import { removeRuntimeFile, writeRuntimeFile } from './bridge/runtime-file.js';
import { ConfigError } from './config.js';
import { exposureRefusal } from './fronting/exposure.js';
import { hostConfigFromEnv } from './host-config.js';
import { LimitError } from './limits.js';
import { processRestarter } from './routes/self-restart.js';

/**
 * Runs the host service in the foreground until SIGTERM/SIGINT (`npm run host`, `conduit serve`).
 * Configuration comes from the environment (see README); a bad value exits 1 naming the variable.
 */
export async function run(_argv: string[] = []): Promise<number> {
  let config;
  try {
    config = hostConfigFromEnv();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof LimitError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const refusal = await exposureRefusal(config);
  if (refusal) {
    console.error(refusal);
    return 1;
  }
  if (config.allowOpenDashboard && config.fronting.mode === 'dashboard') {
    config.log.warn('listening in front of the Hermes dashboard without checking its login', {
      setting: 'CONDUIT_HOST_ALLOW_OPEN_DASHBOARD',
    });
  }
  let stopForRestart: () => Promise<void> = async () => {};
  const restarter = processRestarter({ stop: () => stopForRestart(), log: config.log });
  const host = await buildHost(config, { restarter });
  // The restart stops listening first (the new process binds the same port) and keeps the runtime
  // file: the pid stays the same and the new process rewrites it with its own hook token.
  stopForRestart = () => host.app.close();
  const address = await host.app.listen({ host: config.host, port: config.port });
  const bound = host.app.server.address();
  const loopbackUrl = `http://127.0.0.1:${typeof bound === 'object' && bound ? bound.port : config.port}`;
  await writeRuntimeFile(config.stateDir, { url: loopbackUrl, token: host.hookToken, pid: process.pid });
  config.log.info('host service listening', { address, mode: config.fronting.mode, hermes_home: config.hermesHome });
  const stateDir = config.stateDir;
  return new Promise<number>((resolve) => {
    const stop = () =>
      void removeRuntimeFile(stateDir)
        .then(() => host.app.close())
        .then(() => resolve(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
