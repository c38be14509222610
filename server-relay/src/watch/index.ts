import type { FastifyInstance } from 'fastify';
import type { WatchDeps, WatchSettings } from './deps.js';
import { AudioBridges } from './audio-bridge.js';
import { audioUpgradeHandler } from './audio-upgrade.js';
import { GrantRegistry } from './grants.js';
import { LiveActivityRegistry } from './live-activities.js';
import { liveActivityRoutes } from './live-activity-routes.js';
import { mapsRoutes } from './maps-routes.js';
import { MapsTokenSource } from './maps-token.js';
import { WATCH_DEFAULTS } from './settings.js';
import { watchToolRoutes } from './tool-routes.js';

export type {
  DeviceIdentity,
  GatewayIdentity,
  MapsKeySettings,
  WatchConfig,
  WatchDeps,
  WatchSettings,
} from './deps.js';
export { WATCH_CAPABILITIES } from './capabilities.js';
export { WATCH_DEFAULTS, watchSeamsFromEnv, WatchConfigError } from './settings.js';

/**
 * Registers the Watch features on the relay app: tool grants (routes 16–20), the audio bridge
 * (21–22, on the server's upgrade event), Live Activities and Maps tokens. All state is in memory
 * and released by the app's close.
 */
export function registerWatchFeatures(app: FastifyInstance, deps: WatchDeps): void {
  const settings = resolveSettings(deps);
  const grants = new GrantRegistry(settings, deps.now);
  watchToolRoutes(app, deps, settings, grants);

  const bridges = new AudioBridges(
    {
      maxBridges: settings.maxAudioBridges,
      maxBridgesPerGateway: settings.maxAudioBridgesPerGateway,
      idleMs: settings.audioIdleMs,
    },
    deps.now,
  );
  grants.onClose((grant) => bridges.closeGrant(grant));
  // Every upgrade comes here: the two audio paths, and 404 for any other.
  app.server.on('upgrade', audioUpgradeHandler(deps, grants, bridges));
  // A plain request to an audio path is not a WebSocket upgrade.
  app.get('/v1/watch-audio/:gid/:side', (request, reply) =>
    request.headers.upgrade
      ? reply.status(400).send({ error: 'bad_upgrade' })
      : reply.status(404).send({ error: 'not_found' }),
  );

  liveActivityRoutes(app, deps, new LiveActivityRegistry(deps.now));
  mapsRoutes(app, deps, settings, deps.config.maps ? new MapsTokenSource(deps.config.maps, deps.now) : undefined);

  // preClose: held requests and bridges must end before the server waits for connections to finish.
  app.addHook('preClose', async () => {
    grants.shutdown();
    bridges.closeAll();
  });
}

function resolveSettings(deps: WatchDeps): WatchSettings {
  const out: WatchSettings = { ...WATCH_DEFAULTS };
  for (const key of Object.keys(WATCH_DEFAULTS) as (keyof WatchSettings)[]) {
    const value = deps.config[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
