import path from 'node:path';
import { z } from 'zod';
import { apnsOptionsFromEnv, ApnsConfigError, type ApnsOptions } from './apns/index.js';
import { LimitError, readLimits, type Limits } from './limits.js';
import { watchSeamsFromEnv, WatchConfigError } from './watch/index.js';

/** Everything the relay reads from its environment (§9), validated once at boot. */
export interface RelayConfig {
  host: string;
  port: number;
  /** PUBLIC_URL without a trailing slash: echoed as `relay_url`, base of ring urls. */
  publicUrl: string;
  /** Where the store lives: a SQLite file path (DATA_PATH) or a postgresql:// URL (DATABASE_URL). */
  databaseUrl: string;
  /** DATA_PATH as given; when it names a reference JSON store it is imported once (see store/import-json.ts). */
  dataPath: string;
  /** APNS_TOPIC: the app bundle id registrations must name. */
  apnsTopic: string;
  /** APNS_WATCH_TOPIC: base of the Watch's VoIP topic. */
  apnsWatchTopic: string;
  /**
   * TRUST_PROXY: how many reverse proxies in front of the relay append to X-Forwarded-For (0: none,
   * the socket's peer is the client). Per-IP limits count the entry the outermost of them added.
   */
  trustedProxyHops: number;
  limits: Limits;
  /** APNS_* as the sender factory reads them (seams, provider key). */
  apns: ApnsOptions;
  /** WATCH_* seams and the Maps key for the Watch features. */
  watch: ReturnType<typeof watchSeamsFromEnv>;
  /** The raw environment, for the APNs sender factory and the Watch features' seams. */
  env: NodeJS.ProcessEnv;
  /** METRICS_TOKEN: the bearer `GET /metrics` answers (unset: the route does not exist; README, Metrics). */
  metricsToken?: string;
  /** ADMIN_TOKEN: the bearer of the admin API at /admin/trpc (unset: the API does not exist; README, Admin API). */
  adminToken?: string;
  /**
   * REDIS_URL (with REDIS_KEY_PREFIX): several relay processes on one PostgreSQL share the event-id
   * ledger, the rate windows and the credential index's invalidation through this Redis (README,
   * Several replicas). Unset: one process, everything in memory, as the reference.
   */
  sharedState?: SharedStateConfig;
}

export interface SharedStateConfig {
  /** `redis://` or `rediss://`, credentials included; never logged. */
  redisUrl: string;
  /** Put before every key and channel, so several relays (or test runs) can share one Redis. */
  keyPrefix: string;
}

export class ConfigError extends Error {}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(`${name} is required.`);
  return value;
}

/** PUBLIC_URL must parse and be https (the plugin only sends credentials over https); trailing slashes are stripped. */
export function parsePublicUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL must be a valid https URL.');
  }
  if (url.protocol !== 'https:') throw new ConfigError('PUBLIC_URL must use https.');
  return raw.trim().replace(/\/+$/, '');
}

/**
 * TRUST_PROXY: unset, blank, `0` or `false` trust no proxy; `1` or `true` one proxy (the last
 * X-Forwarded-For entry is the client); `<n>` n proxies in a chain (the n-th entry from the right).
 * Anything else stops the relay: a typo must not silently turn the per-IP limits off or onto a
 * header the client writes.
 */
export function parseTrustProxy(raw: string | undefined): number {
  const value = raw?.trim().toLowerCase() ?? '';
  if (value === '' || value === '0' || value === 'false') return 0;
  if (value === 'true') return 1;
  const hops = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(hops)) {
    throw new ConfigError('TRUST_PROXY must be 1 (or true) for one proxy, or the number of trusted proxy hops.');
  }
  return hops;
}

/**
 * Reads the operator's environment (README configuration table). Throws ConfigError with a message
 * naming the variable; main.ts prints it to stderr and exits non-zero.
 */
export function loadConfig(env: NodeJS.ProcessEnv): RelayConfig {
  let limits: Limits;
  try {
    limits = readLimits(env);
  } catch (error) {
    if (error instanceof LimitError) throw new ConfigError(error.message);
    throw error;
  }
  const publicUrl = parsePublicUrl(required(env, 'PUBLIC_URL'));
  const dataPath = required(env, 'DATA_PATH');
  const apnsTopic = required(env, 'APNS_TOPIC');
  let apns: ApnsOptions;
  let watch: ReturnType<typeof watchSeamsFromEnv>;
  try {
    apns = apnsOptionsFromEnv(env);
    watch = watchSeamsFromEnv(env);
  } catch (error) {
    if (error instanceof ApnsConfigError || error instanceof WatchConfigError) throw new ConfigError(error.message);
    throw error;
  }
  const port = env.PORT?.trim() ? Number(env.PORT) : 9120;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('PORT must be a port number.');
  const databaseUrl = env.DATABASE_URL?.trim() || path.resolve(sqlitePathFor(dataPath));
  const trustedProxyHops = parseTrustProxy(env.TRUST_PROXY);
  const metricsToken = env.METRICS_TOKEN?.trim() || undefined;
  // As long as the relay's own secrets (32 random bytes): the route faces the internet.
  if (metricsToken !== undefined && metricsToken.length < 32) {
    throw new ConfigError('METRICS_TOKEN must be at least 32 characters.');
  }
  const adminToken = env.ADMIN_TOKEN?.trim() || undefined;
  // It can revoke any installation and prune the store: as long as the relay's own secrets.
  if (adminToken !== undefined && adminToken.length < 32) {
    throw new ConfigError('ADMIN_TOKEN must be at least 32 characters.');
  }
  const sharedState = readSharedState(env, databaseUrl);
  return {
    host: env.HOST?.trim() || '127.0.0.1',
    port,
    publicUrl,
    databaseUrl,
    dataPath,
    apnsTopic,
    apnsWatchTopic: env.APNS_WATCH_TOPIC?.trim() || `${apnsTopic}.watchkitapp`,
    trustedProxyHops,
    limits,
    apns,
    watch,
    env,
    ...(metricsToken !== undefined ? { metricsToken } : {}),
    ...(adminToken !== undefined ? { adminToken } : {}),
    ...(sharedState !== undefined ? { sharedState } : {}),
  };
}

const KEY_PREFIX = z.string().regex(/^[A-Za-z0-9:_.-]{1,64}$/);

/**
 * REDIS_URL turns the relay into one replica of several. They must share one PostgreSQL: SQLite is a
 * file of one machine, and replicas on separate databases would be separate relays.
 */
function readSharedState(env: NodeJS.ProcessEnv, databaseUrl: string): SharedStateConfig | undefined {
  const redisUrl = env.REDIS_URL?.trim();
  if (!redisUrl) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(redisUrl);
  } catch {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL.');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL.');
  }
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('REDIS_URL needs DATABASE_URL=postgresql://…: the replicas share one PostgreSQL.');
  }
  const prefix = KEY_PREFIX.safeParse(env.REDIS_KEY_PREFIX?.trim() || 'conduit-relay:');
  if (!prefix.success) {
    throw new ConfigError('REDIS_KEY_PREFIX must be 1–64 letters, digits, or : _ . -');
  }
  return { redisUrl, keyPrefix: prefix.data };
}

/**
 * The SQLite file for DATA_PATH. A reference deployment's DATA_PATH names its JSON file
 * (`relay.json`); the database then sits beside it as `relay.sqlite`, and the JSON is imported once.
 */
export function sqlitePathFor(dataPath: string): string {
  return dataPath.endsWith('.json') ? dataPath.slice(0, -'.json'.length) + '.sqlite' : dataPath;
}
