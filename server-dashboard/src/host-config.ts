import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from './clock.js';
import { ConfigError, type HostConfig } from './config.js';
import { readLimits } from './limits.js';
import { jsonLogger } from './log.js';
import { readPackageVersion } from './package-version.js';

function httpUrl(name: string, raw: string): string {
  try {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
    return url.href.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL`);
  }
}

/** The standalone bearer token: CONDUIT_HOST_TOKEN, else one created once in the state folder (0600). */
function standaloneToken(env: NodeJS.ProcessEnv, stateDir: string): string {
  const given = env.CONDUIT_HOST_TOKEN?.trim();
  if (given) {
    if (given.length < 16) throw new ConfigError('CONDUIT_HOST_TOKEN must be at least 16 characters');
    return given;
  }
  const file = path.join(stateDir, 'host-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, token + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

/** `CONDUIT_HOST_ALLOWED_HOSTS`: comma-separated DNS names, `*.example.net` for every name under one. */
function allowedHostNames(raw: string): string[] {
  const names = raw
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  for (const name of names) {
    if (!/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name)) {
      throw new ConfigError('CONDUIT_HOST_ALLOWED_HOSTS must list host names (no ports, no schemes), comma-separated');
    }
  }
  return names;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (!raw || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be 1 or 0`);
}

/** Reads the host service's configuration from the environment; throws ConfigError naming the variable. */
export function hostConfigFromEnv(env: NodeJS.ProcessEnv = process.env): HostConfig {
  const portText = env.CONDUIT_HOST_PORT?.trim();
  const port = portText ? Number(portText) : 9119;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError('CONDUIT_HOST_PORT must be a port number');
  const hermesHome = path.resolve(env.HERMES_HOME?.trim() || path.join(os.homedir(), '.hermes'));
  const stateDir = path.resolve(env.CONDUIT_STATE_DIR?.trim() || path.join(hermesHome, 'conduit-host'));
  const dashboard = env.HERMES_DASHBOARD_URL?.trim();
  const apiUrl = env.HERMES_API_URL?.trim();
  const apiKey = env.HERMES_API_KEY?.trim() || env.API_SERVER_KEY?.trim();
  if (apiUrl && !apiKey) throw new ConfigError('HERMES_API_KEY must be set with HERMES_API_URL');
  const loadedVersion = readPackageVersion() ?? '0.0.0';
  const metricsToken = env.CONDUIT_METRICS_TOKEN?.trim();
  if (metricsToken && metricsToken.length < 16)
    throw new ConfigError('CONDUIT_METRICS_TOKEN must be at least 16 characters');
  return {
    host: env.CONDUIT_HOST_BIND?.trim() || '127.0.0.1',
    port,
    loadedVersion,
    readDiskVersion: readPackageVersion,
    hermesHome,
    stateDir,
    fronting: dashboard
      ? { mode: 'dashboard', dashboardUrl: httpUrl('HERMES_DASHBOARD_URL', dashboard) }
      : { mode: 'standalone', bearerToken: standaloneToken(env, stateDir) },
    allowedHosts: allowedHostNames(env.CONDUIT_HOST_ALLOWED_HOSTS ?? ''),
    allowOpenDashboard: flag(env, 'CONDUIT_HOST_ALLOW_OPEN_DASHBOARD'),
    hermesApi: apiUrl && apiKey ? { url: httpUrl('HERMES_API_URL', apiUrl), key: apiKey } : undefined,
    limits: readLimits(env),
    clock: systemClock,
    log: jsonLogger(),
    ...(metricsToken ? { metricsToken } : {}),
    serviceEnv: env,
  };
}
