import { buildApp } from './app.js';
import { readPackageVersion } from './package-version.js';

const port = process.env.CONDUIT_HOST_PORT?.trim() ? Number(process.env.CONDUIT_HOST_PORT) : 9119;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('CONDUIT_HOST_PORT must be a port number.');
  process.exit(1);
}
const app = await buildApp({
  host: process.env.CONDUIT_HOST_BIND?.trim() || '127.0.0.1',
  port,
  loadedVersion: readPackageVersion() ?? '0.0.0',
  readDiskVersion: readPackageVersion,
});
const address = await app.listen({ host: process.env.CONDUIT_HOST_BIND?.trim() || '127.0.0.1', port });
console.log(JSON.stringify({ level: 'info', msg: 'host service listening', address }));
const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
