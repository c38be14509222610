/**
 * The isolated staging helper (`messenger staging`): the connector started only against Relay's
 * staging origin and a state directory of its own. It exists so a staging Agent Token can never be
 * pointed at production by a stale RELAY_BASE_URL, and never replays the production inbox.
 */
import path from 'node:path';
import type { MessengerConfig } from './config.js';

export const STAGING_ORIGIN = 'https://api.staging.relayapp.im';

/** Why this configuration may not run as staging, or null when it may. */
export function stagingRefusal(config: MessengerConfig): string | null {
  if (config.relay.origin !== STAGING_ORIGIN)
    return `the staging helper refuses every API origin but ${STAGING_ORIGIN} (RELAY_BASE_URL is ${config.relay.origin})`;
  // The default inbox is the production one; a shared directory would also fail the account binding,
  // but only after the staging token was already in use.
  if (path.resolve(config.stateDir) === path.resolve(config.hermesHome, 'relay'))
    return 'the staging helper needs its own RELAY_STATE_DIR (e.g. <HERMES_HOME>/relay-staging), not the default inbox';
  return null;
}
