import path from 'node:path';

/** The gateway's configuration, validated once at boot. */
export interface VoiceConfig {
  host: string;
  port: number;
  /** The bearer token clients must present. Never empty: startup fails closed without one. */
  apiKey: string;
  /** Profile name reported by discovery. */
  profile: string;
}

export class ConfigError extends Error {}

const PROFILE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The profile name: HERMES_HOME's basename when it sits in a `profiles` folder and is a valid name, else `default`. */
export function profileFromHermesHome(hermesHome: string | undefined): string {
  if (!hermesHome) return 'default';
  const resolved = path.resolve(hermesHome);
  const name = path.basename(resolved);
  return path.basename(path.dirname(resolved)) === 'profiles' && PROFILE_NAME.test(name) ? name : 'default';
}

export function loadConfig(env: NodeJS.ProcessEnv): VoiceConfig {
  const apiKey = env.HERMES_REALTIME_API_KEY?.trim() ?? '';
  if (!apiKey)
    throw new ConfigError('HERMES_REALTIME_API_KEY must be set: the gateway refuses to start without a client key.');
  const port = env.HERMES_REALTIME_PORT?.trim() ? Number(env.HERMES_REALTIME_PORT) : 9130;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError('HERMES_REALTIME_PORT must be a port number.');
  return {
    host: env.HERMES_REALTIME_HOST?.trim() || '127.0.0.1',
    port,
    apiKey,
    profile: profileFromHermesHome(env.HERMES_HOME),
  };
}
