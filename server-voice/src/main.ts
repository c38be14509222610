import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';

// `npm run voice`: reads the configuration, builds the gateway and listens. A bad setting exits with a
// message naming it (the gateway never starts half-configured, and never without a client key).
try {
  const config = loadConfig(process.env);
  const app = await buildApp(config, { logger: createLogger({ debug: config.debug }) });
  const address = await app.listen({ host: config.host, port: config.port });
  console.log(JSON.stringify({ time: new Date().toISOString(), level: 'info', event: 'listening', address }));
  const stop = () => {
    // Calls close with the app; if something hangs, still leave within 10 s rather than be killed.
    setTimeout(() => process.exit(0), 10_000).unref();
    void app.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`voice gateway configuration: ${error.message}`);
    process.exit(1);
  }
  throw error;
}
