import type { FastifyInstance } from 'fastify';
import type { WatchDeps, WatchSettings } from './deps.js';
import { AudioBridges } from './audio-bridge.js';
import { audioUpgradeHandler } from './audio-upgrade.js';
import { LocalWatchGrants, type WatchGrants } from './grant-service.js';
import { GrantRegistry } from './grants.js';
import { LiveActivityRegistry, memoryLiveActivities } from './live-activities.js';
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
  // Replicas count their grants relay-wide (cluster/watch-cluster.ts) instead of per process.
  const registry = new GrantRegistry(
    deps.distribute ? { ...settings, maxGrants: Number.MAX_SAFE_INTEGER } : settings,
    deps.now,
  );
  const bridges = new AudioBridges(
    {
      // Replicas count bridges relay-wide (cluster/watch-cluster.ts) instead of per process.
      maxBridges: deps.distribute ? Number.MAX_SAFE_INTEGER : settings.maxAudioBridges,
      maxBridgesPerGateway: settings.maxAudioBridgesPerGateway,
      idleMs: settings.audioIdleMs,
      bytesPerS: settings.audioBytesPerS,
    },
    deps.now,
  );
  registry.onClose((grant) => bridges.closeGrant(grant));
  const local = new LocalWatchGrants(registry, bridges);
  // Replicas: each grant lives on one replica and the others send it their requests.
  const distributed = deps.distribute?.(local, settings);
  const grants: WatchGrants = distributed ?? local;
  watchToolRoutes(app, deps, settings, grants);
  // Every upgrade comes here: the two audio paths, and 404 for any other.
  app.server.on('upgrade', audioUpgradeHandler(deps, grants));
  // A plain request to an audio path is not a WebSocket upgrade.
  app.get('/v1/watch-audio/:gid/:side', (request, reply) =>
    request.headers.upgrade
      ? reply.status(400).send({ error: 'bad_upgrade' })
      : reply.status(404).send({ error: 'not_found' }),
  );

  // Replicas share the registrations (Redis); one process keeps them in memory.
  liveActivityRoutes(app, deps, deps.liveActivities ?? memoryLiveActivities(new LiveActivityRegistry(deps.now)));
  mapsRoutes(app, deps, settings, deps.config.maps ? new MapsTokenSource(deps.config.maps, deps.now) : undefined);

  // preClose: held requests and bridges must end before the server waits for connections to finish.
  app.addHook('preClose', async () => {
    registry.shutdown();
    bridges.closeAll();
    distributed?.close?.();
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
