import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bindRoute, WireError } from '@conduit/contracts/server';
import {
  registerLiveActivity,
  removeLiveActivity,
  reportLiveActivityProgress,
} from '@conduit/contracts/relay/live-activities';
import { readJson } from '../http/read-json.js';
import type { DeviceIdentity, WatchDeps } from './deps.js';
import { liveActivityPush, type LiveActivityStore, tokenIsGone } from './live-activities.js';
import { authorizationOf } from './request-input.js';

/** Per-key limits, per 60 s. The plugin coalesces to one report per 5 s per watched turn. */
export const LIVE_ACTIVITY_LIMITS = { registrationsPerInstallation: 30, reportsPerGateway: 120 } as const;

/** Binds the Live Activity routes: the phone registers tokens, the host reports progress. */
export function liveActivityRoutes(app: FastifyInstance, deps: WatchDeps, registry: LiveActivityStore): void {
  const limit = async (key: string, max: number): Promise<void> => {
    if (!(await deps.rateLimit.hit(key, max))) throw new WireError(429, 'rate_limited');
  };
  const deviceOf = async (request: FastifyRequest): Promise<DeviceIdentity> => {
    const device = await deps.authenticateDevice(authorizationOf(request.headers));
    if (!device) throw new WireError(401, 'unauthorized');
    return device;
  };

  bindRoute(
    app,
    registerLiveActivity,
    async ({ request, readBody }) => {
      const device = await deviceOf(request);
      await limit(`live-activity:${device.installationId}`, LIVE_ACTIVITY_LIMITS.registrationsPerInstallation);
      const body = readBody();
      const registration = await registry.register(
        device.installationId,
        body.push_token,
        body.session_ids,
        body.gateway_id,
      );
      if (registration === 'capacity') return { status: 503, body: { error: 'live_activity_capacity' } };
      if (registration === 'taken') return { status: 409, body: { error: 'live_activity_token_in_use' } };
      return {
        status: 200,
        body: { registered: true as const, expires_at: new Date(registration.expiresAt).toISOString() },
      };
    },
    { readJson },
  );

  bindRoute(app, removeLiveActivity, async ({ params, request }) => {
    const device = await deviceOf(request);
    await limit(`live-activity:${device.installationId}`, LIVE_ACTIVITY_LIMITS.registrationsPerInstallation);
    await registry.remove(device.installationId, params.push_token);
    return { status: 204, body: undefined };
  });

  bindRoute(
    app,
    reportLiveActivityProgress,
    async ({ request, readBody }) => {
      const gateway = await deps.authenticateGateway(authorizationOf(request.headers));
      if (!gateway) throw new WireError(401, 'unauthorized');
      await limit(`live-activity-progress:${gateway.gatewayId}`, LIVE_ACTIVITY_LIMITS.reportsPerGateway);
      const progress = readBody();
      const watching = await registry.watching(gateway.installationId, gateway.gatewayId, progress.session_id);
      const notification = liveActivityPush(deps.config.apnsTopic, progress, deps.now());
      const results = await Promise.all(
        watching.map(async (registration) => {
          try {
            const result = await deps.apns.send(registration.pushToken, notification);
            if (tokenIsGone(result)) await registry.forget(registration);
            return result.ok;
          } catch {
            // APNs unreachable: the next report tries again; the phone shows the activity as stale meanwhile.
            return false;
          }
        }),
      );
      // The turn is over: its activities get nothing more.
      if (progress.end === true) await Promise.all(watching.map((registration) => registry.forget(registration)));
      return { status: 200, body: { watching: watching.length > 0, sent: results.filter(Boolean).length } };
    },
    { readJson },
  );
}
