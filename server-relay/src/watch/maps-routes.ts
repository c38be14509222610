import type { FastifyInstance } from 'fastify';
import { bindRoute } from '@conduit/contracts/server';
import { mintMapsToken } from '@conduit/contracts/relay/maps';
import type { WatchDeps, WatchSettings } from './deps.js';
import type { MapsTokenSource } from './maps-token.js';
import { authorizationOf } from './request-input.js';

export const MAPS_TOKENS_PER_GATEWAY_PER_MINUTE = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Binds POST /v1/maps/token; `source` is undefined when the relay has no Maps key (404). */
export function mapsRoutes(
  app: FastifyInstance,
  deps: WatchDeps,
  settings: Pick<WatchSettings, 'mapsTokensPerInstallationPerDay'>,
  source: MapsTokenSource | undefined,
): void {
  bindRoute(app, mintMapsToken, async ({ request }) => {
    const gateway = await deps.authenticateGateway(authorizationOf(request.headers));
    if (!gateway) return { status: 401, body: { error: 'unauthorized' } };
    if (!(await deps.rateLimit.hit(`maps-token:${gateway.gatewayId}`, MAPS_TOKENS_PER_GATEWAY_PER_MINUTE))) {
      return { status: 429, body: { error: 'rate_limited' } };
    }
    // The host stops asking for an hour on 404, so it is the answer for "no key here".
    if (!source) return { status: 404, body: { error: 'maps_unavailable' } };
    const token = await source.token().catch(() => undefined);
    if (!token) return { status: 502, body: { error: 'maps_unreachable' } };
    // Counted per installation, not per gateway: one phone can pair any number of self-made hosts.
    // Counted after the mint, so a host retrying through an Apple outage spends nothing; a refused
    // mint costs at most one shared exchange, which every host's next request reuses anyway.
    const window = `maps-token-day:${gateway.installationId}`;
    if (!(await deps.rateLimit.hit(window, settings.mapsTokensPerInstallationPerDay, DAY_MS))) {
      return { status: 429, body: { error: 'maps_token_limit' } };
    }
    return {
      status: 200,
      body: {
        access_token: token.accessToken,
        expires_at: new Date(token.expiresAtMs).toISOString(),
        expires_in: Math.max(0, Math.floor((token.expiresAtMs - deps.now()) / 1000)),
      },
    };
  });
}
