import { buildHost } from './app.js';
import { removeRuntimeFile, writeRuntimeFile } from './bridge/runtime-file.js';
import { ConfigError } from './config.js';
import { hostConfigFromEnv } from './host-config.js';
import { LimitError } from './limits.js';

let config;
try {
  config = hostConfigFromEnv();
} catch (error) {
  if (error instanceof ConfigError || error instanceof LimitError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
const host = await buildHost(config);
const address = await host.app.listen({ host: config.host, port: config.port });
const port = host.app.server.address();
const loopbackUrl = `http://127.0.0.1:${typeof port === 'object' && port ? port.port : config.port}`;
await writeRuntimeFile(config.stateDir, { url: loopbackUrl, token: host.hookToken, pid: process.pid });
config.log.info('host service listening', {
  address,
  mode: config.fronting.mode,
  hermes_home: config.hermesHome,
});
const stop = () =>
  void removeRuntimeFile(config.stateDir)
    .then(() => host.app.close())
    .then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
