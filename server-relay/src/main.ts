import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';

try {
  const config = loadConfig(process.env);
  const app = await buildApp(config);
  const address = await app.listen({ host: config.host, port: config.port });
  console.log(JSON.stringify({ level: 'info', msg: 'relay listening', address }));
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
