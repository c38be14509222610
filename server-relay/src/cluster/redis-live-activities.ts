import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import {
  LIVE_ACTIVITY_TTL_MS,
  MAX_LIVE_ACTIVITIES,
  MAX_LIVE_ACTIVITIES_PER_INSTALLATION,
  type LiveActivityRegistration,
  type LiveActivityStore,
} from '../watch/live-activities.js';
import { shared } from './redis-connection.js';

/**
 * Registers a token, the in-memory rules in one atomic step (LiveActivityRegistry.register).
 * KEYS: the token's hash, the installation's set (token → expiry), the relay's set.
 * ARGV: installation id, token, session ids (JSON), gateway id ('' = any), now, expiry, ttl,
 * per-installation max, relay max, the token hash key prefix, revision.
 * Returns {'taken'}, {'capacity'} or {'ok', expiresAt}.
 */
const REGISTER_SCRIPT = `
local now = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local current = redis.call('HMGET', KEYS[1], 'installationId', 'expiresAt')
if current[1] and tonumber(current[2]) > now then
  if current[1] ~= ARGV[1] then return {'taken'} end
  redis.call('HSET', KEYS[1], 'sessionIds', ARGV[3], 'gatewayId', ARGV[4], 'rev', ARGV[11])
  return {'ok', current[2]}
end
redis.call('DEL', KEYS[1])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[8]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  redis.call('DEL', ARGV[10] .. oldest)
  redis.call('ZREM', KEYS[2], oldest)
  redis.call('ZREM', KEYS[3], oldest)
elseif redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[9]) then
  return {'capacity'}
end
redis.call('HSET', KEYS[1], 'installationId', ARGV[1], 'sessionIds', ARGV[3], 'gatewayId', ARGV[4],
  'expiresAt', ARGV[6], 'rev', ARGV[11])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[2])
return {'ok', ARGV[6]}`;

/**
 * Deletes a token when its field ARGV[1] still holds ARGV[2] (the owner for a DELETE, the revision for
 * a forget). KEYS: the token's hash, the installation's set, the relay's set. ARGV[3]: the token.
 */
const DELETE_IF_SCRIPT = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1`;

/**
 * An installation's live registrations, flat: token, installation id, session ids, gateway id, expiry,
 * revision, for each. KEYS: the installation's set. ARGV: now, the token hash key prefix.
 */
const LIST_SCRIPT = `
local tokens = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
local out = {}
for _, token in ipairs(tokens) do
  local row = redis.call('HMGET', ARGV[2] .. token, 'installationId', 'sessionIds', 'gatewayId', 'expiresAt', 'rev')
  if row[1] then
    table.insert(out, token)
    for i = 1, 5 do table.insert(out, row[i]) end
  end
end
return out`;

type ScriptClient = Redis & {
  conduitLiveActivityRegister(a: string, b: string, c: string, ...argv: string[]): Promise<string[]>;
  conduitLiveActivityDeleteIf(a: string, b: string, c: string, ...argv: string[]): Promise<number>;
  conduitLiveActivityList(key: string, now: string, prefix: string): Promise<(string | null)[]>;
};

const SessionIds = z.array(z.string());

/** A registration as the replicas share it: the revision tells a forget which write it saw. */
interface SharedRegistration extends LiveActivityRegistration {
  revision: string;
}

/**
 * Live Activity registrations shared by the replicas: each token a Redis hash living until its 8-hour
 * expiry, indexed by a sorted set per installation (the eight-per-installation rule) and one for the
 * relay (the 20,000 bound), all changed by scripts so two replicas never both take a token or both
 * fill the last place. A registration is acknowledged only once Redis holds it; Redis down answers
 * 503 shared_state_unavailable (the relay's rule for shared state).
 */
export class RedisLiveActivities implements LiveActivityStore {
  private readonly client: ScriptClient;

  constructor(
    client: Redis,
    private readonly keyPrefix: string,
    private readonly now: () => number,
  ) {
    client.defineCommand('conduitLiveActivityRegister', { numberOfKeys: 3, lua: REGISTER_SCRIPT });
    client.defineCommand('conduitLiveActivityDeleteIf', { numberOfKeys: 3, lua: DELETE_IF_SCRIPT });
    client.defineCommand('conduitLiveActivityList', { numberOfKeys: 1, lua: LIST_SCRIPT });
    this.client = client as ScriptClient;
  }

  private get tokenPrefix(): string {
    return `${this.keyPrefix}live-activity:token:`;
  }

  private keys(installationId: string, pushToken: string): [string, string, string] {
    return [
      this.tokenPrefix + pushToken,
      `${this.keyPrefix}live-activity:installation:${installationId}`,
      `${this.keyPrefix}live-activity:all`,
    ];
  }

  async register(
    installationId: string,
    pushToken: string,
    sessionIds: readonly string[],
    gatewayId: string | undefined,
  ): Promise<SharedRegistration | 'capacity' | 'taken'> {
    const now = this.now();
    const unique = [...new Set(sessionIds)];
    const revision = randomUUID();
    const answer = await shared(() =>
      this.client.conduitLiveActivityRegister(
        ...this.keys(installationId, pushToken),
        installationId,
        pushToken,
        JSON.stringify(unique),
        gatewayId ?? '',
        String(now),
        String(now + LIVE_ACTIVITY_TTL_MS),
        String(LIVE_ACTIVITY_TTL_MS),
        String(MAX_LIVE_ACTIVITIES_PER_INSTALLATION),
        String(MAX_LIVE_ACTIVITIES),
        this.tokenPrefix,
        revision,
      ),
    );
    if (answer[0] === 'taken' || answer[0] === 'capacity') return answer[0];
    return { installationId, pushToken, sessionIds: unique, gatewayId, expiresAt: Number(answer[1]), revision };
  }

  async remove(installationId: string, pushToken: string): Promise<void> {
    await shared(() =>
      this.client.conduitLiveActivityDeleteIf(
        ...this.keys(installationId, pushToken),
        'installationId',
        installationId,
        pushToken,
      ),
    );
  }

  async forget(registration: LiveActivityRegistration): Promise<void> {
    const revision = (registration as Partial<SharedRegistration>).revision;
    if (revision === undefined) return;
    await shared(() =>
      this.client.conduitLiveActivityDeleteIf(
        ...this.keys(registration.installationId, registration.pushToken),
        'rev',
        revision,
        registration.pushToken,
      ),
    );
  }

  async watching(installationId: string, gatewayId: string, sessionId: string): Promise<SharedRegistration[]> {
    const now = this.now();
    const [, installationKey] = this.keys(installationId, '');
    const flat = await shared(() =>
      this.client.conduitLiveActivityList(installationKey, String(now), this.tokenPrefix),
    );
    const out: SharedRegistration[] = [];
    for (let i = 0; i + 5 < flat.length; i += 6) {
      const [pushToken, owner, sessionText, gateway, expiresText, revision] = flat.slice(i, i + 6);
      const sessions = SessionIds.safeParse(safeJson(sessionText ?? ''));
      const expiresAt = Number(expiresText);
      if (!pushToken || owner !== installationId || !sessions.success || !revision) continue;
      if (!(expiresAt > now)) continue;
      const registration: SharedRegistration = {
        installationId,
        pushToken,
        sessionIds: sessions.data,
        gatewayId: gateway ? gateway : undefined,
        expiresAt,
        revision,
      };
      if (registration.gatewayId !== undefined && registration.gatewayId !== gatewayId) continue;
      if (registration.sessionIds.includes(sessionId)) out.push(registration);
    }
    return out;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
