import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LIMIT_TABLE } from '../limits.js';
import type { MapsKeySettings, WatchSettings } from './deps.js';

/** Reference defaults (API.md §4, §5, §9). */
export const WATCH_DEFAULTS: WatchSettings = {
  maxGrants: 2_048,
  maxGrantsPerGateway: 4,
  watchCallsPerMinute: 1_200,
  maxAudioBridges: 200,
  maxAudioBridgesPerGateway: 2,
  callWaitMs: 25_000,
  hostPollWaitMs: 25_000,
  hostGoneMs: 40_000,
  audioIdleMs: 60_000,
  audioBytesPerS: LIMIT_TABLE.watchAudioBytesPerS.default,
  mapsTokensPerInstallationPerDay: LIMIT_TABLE.mapsTokensPerInstallationPerDay.default,
};

/** Apple's Maps Server API token endpoint. */
export const APPLE_MAPS_TOKEN_URL = 'https://maps-api.apple.com/v1/token';

export class WatchConfigError extends Error {}

const SEAMS = {
  WATCH_CALL_WAIT_MS: 'callWaitMs',
  WATCH_HOST_POLL_WAIT_MS: 'hostPollWaitMs',
  WATCH_HOST_GONE_MS: 'hostGoneMs',
  WATCH_AUDIO_IDLE_MS: 'audioIdleMs',
} as const;

/**
 * Reads the Watch test seams (WATCH_*_MS, positive integers) and the Maps key (MAPS_KEY_ID +
 * MAPS_KEY_PATH, with APNS_TEAM_ID as the team). Throws WatchConfigError naming the variable.
 */
export function watchSeamsFromEnv(env: NodeJS.ProcessEnv): Partial<WatchSettings> & { maps?: MapsKeySettings } {
  const out: Partial<WatchSettings> & { maps?: MapsKeySettings } = {};
  for (const [name, field] of Object.entries(SEAMS)) {
    const text = env[name]?.trim();
    if (!text) continue;
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value <= 0) {
      throw new WatchConfigError(`${name} must be a positive integer.`);
    }
    out[field] = value;
  }
  const keyId = env.MAPS_KEY_ID?.trim();
  const keyPath = env.MAPS_KEY_PATH?.trim();
  if (keyId || keyPath) {
    if (!keyId || !keyPath) throw new WatchConfigError('MAPS_KEY_ID and MAPS_KEY_PATH must be set together.');
    const teamId = env.APNS_TEAM_ID?.trim();
    if (!teamId) throw new WatchConfigError('APNS_TEAM_ID is required for the Maps key.');
    let keyPem: string;
    try {
      keyPem = readFileSync(keyPath, 'utf8');
    } catch {
      throw new WatchConfigError('MAPS_KEY_PATH could not be read.');
    }
    try {
      createPrivateKey(keyPem);
    } catch {
      // Never echo the file: it is a private key.
      throw new WatchConfigError('MAPS_KEY_PATH is not a usable private key.');
    }
    const tokenUrl = env.MAPS_TOKEN_URL?.trim() || APPLE_MAPS_TOKEN_URL;
    if (!/^https?:\/\//.test(tokenUrl)) throw new WatchConfigError('MAPS_TOKEN_URL must be an http(s) URL.');
    out.maps = { keyId, teamId, keyPem, tokenUrl };
  }
  return out;
}
