import type { FastifyInstance } from 'fastify';
import type { WatchDeps } from './deps.js';

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

/** Registers the Watch routes (grants, audio bridge, Live Activities, Maps tokens) on the relay app. */
export function registerWatchFeatures(app: FastifyInstance, deps: WatchDeps): void {
  void app;
  void deps;
}
