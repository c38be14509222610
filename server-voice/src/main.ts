import { buildApp } from './app.js';
import { conferenceConfigFromEnv } from './conference/conference-config.js';
import { startConference } from './conference/start-conference.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';
import { lowerHelperThreadPriority } from './media/thread-priority.js';

// `npm run voice`: reads the configuration, builds the gateway and listens. A bad setting exits with a
// message naming it (the gateway never starts half-configured, and never without a client key).
try {
  const config = loadConfig(process.env);
  // Conference mode (LIVEKIT_URL set) joins a LiveKit room next to the direct endpoint.
  const conference = conferenceConfigFromEnv(process.env);
  const logger = createLogger({ debug: config.debug });
  const app = await buildApp(config, { logger });
  const address = await app.listen({ host: config.host, port: config.port });
  // After start-up, so the threads that warming up started are there to be found at once.
  const helpers = config.lowerHelperThreads ? lowerHelperThreadPriority() : null;
  console.log(
    JSON.stringify({
      time: new Date().toISOString(),
      level: 'info',
      event: 'listening',
      address,
      helper_threads_lowered: helpers?.lowered.size ?? 0,
    }),
  );
  const conferenceGateway = conference ? await startConference(config, conference, logger) : null;
  const stop = () => {
    // Calls close with the app; if something hangs, still leave within 10 s rather than be killed.
    setTimeout(() => process.exit(0), 10_000).unref();
    void Promise.allSettled([app.close(), conferenceGateway?.stop()]).finally(() => process.exit(0));
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
