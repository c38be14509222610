import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bindRoute, WireError } from '@conduit/contracts/server';
import {
  closeWatchGrant,
  createWatchGrant,
  pollWatchCalls,
  postWatchCall,
  postWatchResult,
} from '@conduit/contracts/relay/watch-tools';
import { readJson } from '../http/read-json.js';
import type { GatewayIdentity, WatchDeps, WatchSettings } from './deps.js';
import type { GrantView, WatchGrants } from './grant-service.js';
import { authorizationOf, onClientGone, watchKeyHash } from './request-input.js';

/** Per-key limits of the Watch tool routes, per 60 s (API.md routes 16–20). */
export const WATCH_TOOL_LIMITS = {
  grantsPerGateway: 12,
  callsPerIp: 120,
  callsPerGrant: 30,
  pollsPerGrant: 240,
  resultsPerGrant: 120,
} as const;

/** Binds routes 16–20: grants, held Watch calls, the host's long poll, results, close. */
export function watchToolRoutes(
  app: FastifyInstance,
  deps: WatchDeps,
  settings: WatchSettings,
  grants: WatchGrants,
): void {
  const limit = async (key: string, max: number): Promise<void> => {
    if (!(await deps.rateLimit.hit(key, max))) throw new WireError(429, 'rate_limited');
  };
  const gatewayOf = async (request: FastifyRequest): Promise<GatewayIdentity> => {
    const gateway = await deps.authenticateGateway(authorizationOf(request.headers));
    if (!gateway) throw new WireError(401, 'unauthorized');
    return gateway;
  };
  /** The gateway's own open grant; unknown, foreign and closed grants all answer 410 so ids reveal nothing. */
  const ownedOpenGrant = async (gid: string, gateway: GatewayIdentity): Promise<GrantView> => {
    const grant = await grants.findOwned(gid, gateway);
    if (!grant) throw new WireError(410, 'grant_closed', { reason: 'expired' });
    if (grant.closedReason !== undefined) throw new WireError(410, 'grant_closed', { reason: grant.closedReason });
    return grant;
  };

  bindRoute(
    app,
    createWatchGrant,
    async ({ request, readBody }) => {
      const gateway = await gatewayOf(request);
      await limit(`watch-grant:${gateway.gatewayId}`, WATCH_TOOL_LIMITS.grantsPerGateway);
      const body = readBody();
      const grant = await grants.create(gateway, {
        keyHashHex: body.watch_key_sha256,
        ttlS: body.ttl_s,
        maxCalls: body.max_calls,
        audio: body.audio === true,
      });
      if (grant === 'capacity') return { status: 503, body: { error: 'watch_grant_capacity' } };
      return {
        status: 201,
        body: {
          grant_id: grant.id,
          expires_at: new Date(grant.expiresAt).toISOString(),
          call_wait_ms: settings.callWaitMs,
          audio: grant.audio,
        },
      };
    },
    { readJson },
  );

  bindRoute(
    app,
    postWatchCall,
    async ({ params, request, reply, readBody }) => {
      // Per-IP before anything else, so a key-guessing client is throttled before it learns anything.
      await limit(`watch-call-ip:${deps.clientIp(request.raw)}`, WATCH_TOOL_LIMITS.callsPerIp);
      const keyHash = watchKeyHash(authorizationOf(request.headers));
      const grant = keyHash ? await grants.findByKey(params.gid, keyHash) : undefined;
      if (!grant) return { status: 401, body: { error: 'unauthorized' } };
      if (grant.closedReason !== undefined) {
        return { status: 410, body: { error: 'grant_closed', reason: grant.closedReason } };
      }
      await limit(`watch-call:${grant.id}`, WATCH_TOOL_LIMITS.callsPerGrant);
      await limit('watch-call-global', settings.watchCallsPerMinute);
      const call = readBody();
      const gone = new AbortController();
      onClientGone(reply, () => gone.abort());
      const outcome = await grants.submitCall(grant.id, call, gone.signal);
      if (outcome.kind === 'refused') {
        switch (outcome.refused) {
          case 'duplicate_call':
            return { status: 409, body: { error: 'duplicate_call' } };
          case 'grant_exhausted':
          case 'too_many_calls':
            return { status: 429, body: { error: outcome.refused } };
          case 'host_offline':
            return { status: 503, body: { error: 'host_offline' } };
        }
      }
      switch (outcome.kind) {
        case 'answered':
          return { status: 200, body: outcome.result };
        case 'timeout':
          return { status: 504, body: { error: 'host_timeout' } };
        case 'closed':
          return { status: 410, body: { error: 'grant_closed', reason: outcome.reason } };
        case 'shutdown':
        case 'dropped':
          return { status: 503, body: { error: 'host_offline' } };
      }
    },
    { readJson },
  );

  bindRoute(app, pollWatchCalls, async ({ params, query, request, reply }) => {
    const gateway = await gatewayOf(request);
    const grant = await ownedOpenGrant(params.gid, gateway);
    await limit(`watch-poll:${grant.id}`, WATCH_TOOL_LIMITS.pollsPerGrant);
    const gone = new AbortController();
    onClientGone(reply, () => gone.abort());
    const outcome = await grants.poll(grant.id, pollWaitMs(query.wait_ms, settings.hostPollWaitMs), gone.signal);
    if (outcome.kind === 'closed') return { status: 410, body: { error: 'grant_closed', reason: outcome.reason } };
    return { status: 200, body: { calls: outcome.kind === 'calls' ? outcome.calls : [] } };
  });

  bindRoute(
    app,
    postWatchResult,
    async ({ params, request, readBody }) => {
      const gateway = await gatewayOf(request);
      const grant = await ownedOpenGrant(params.gid, gateway);
      await limit(`watch-result:${grant.id}`, WATCH_TOOL_LIMITS.resultsPerGrant);
      const result = readBody();
      if (!(await grants.answer(grant.id, params.rid, result))) return { status: 404, body: { error: 'unknown_call' } };
      return { status: 200, body: { status: 'delivered' as const } };
    },
    { readJson },
  );

  bindRoute(app, closeWatchGrant, async ({ params, request }) => {
    // Always 204: the answer must not tell a caller whether the id, key or credential was right.
    const authorization = authorizationOf(request.headers);
    const keyHash = watchKeyHash(authorization);
    if (keyHash) {
      if (!(await deps.rateLimit.hit(`watch-call-ip:${deps.clientIp(request.raw)}`, WATCH_TOOL_LIMITS.callsPerIp))) {
        return { status: 204, body: undefined };
      }
      await grants.closeByKey(params.gid, keyHash);
      return { status: 204, body: undefined };
    }
    const gateway = await deps.authenticateGateway(authorization);
    if (gateway) await grants.closeOwned(params.gid, gateway);
    return { status: 204, body: undefined };
  });
}

/** `min(wait_ms, cap)`; missing, empty or not a non-negative integer means the cap (API.md §4). */
export function pollWaitMs(raw: string | undefined, capMs: number): number {
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return capMs;
  return Math.min(Number(raw), capMs);
}
