import type { FastifyInstance } from 'fastify';
import { bindRoute } from '@conduit/contracts/server';
import { getMeta } from '@conduit/contracts/relay/index';
import { EVENT_CAPABILITIES } from '../domain/events.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateDevice, ipOf, limit, type RelayContext } from '../relay-context.js';

/** The relay version the app reads to decide which features to offer. */
export const RELAY_VERSION = '0.11.0';

export const CORE_CAPABILITIES = [
  'decisions',
  'decision-cards',
  'meta',
  'e2e-v1',
  'calls',
  'voip-calls',
  'watch-calls',
  ...EVENT_CAPABILITIES,
];

export function metaRoutes(app: FastifyInstance, context: RelayContext, capabilities: readonly string[]): void {
  bindRoute(app, getMeta, async ({ request }) => {
    // Per-IP before authentication, so credential guessing is bounded too.
    await limit(context, `meta-ip:${ipOf(context, request)}`, FIXED_LIMITS.metaPerIp);
    const installation = await authenticateDevice(context, request);
    await limit(context, `meta:${installation.id}`, FIXED_LIMITS.metaPerInstallation);
    const gateways = await context.store.listGateways(installation.id);
    const overlays = await context.activity.overlays(
      installation.id,
      gateways.map((gateway) => gateway.id),
    );
    return {
      status: 200,
      body: {
        version: RELAY_VERSION,
        capabilities: [...capabilities],
        gateways: gateways.map((gateway) => {
          const pending = overlays.get(gateway.id);
          const pluginVersion = pending?.pluginVersion ?? gateway.pluginVersion;
          const lastEventAt = pending?.lastEventAt ?? gateway.lastEventAt;
          // What is not known is left out, as the reference does: the app tells absence from a value, not null.
          return {
            id: gateway.id,
            name: gateway.name,
            ...(pluginVersion !== null ? { plugin_version: pluginVersion } : {}),
            plugin_capabilities: pending?.pluginCapabilities ?? gateway.pluginCapabilities ?? [],
            ...(lastEventAt !== null ? { last_event_at: new Date(lastEventAt).toISOString() } : {}),
            ...(gateway.dashboardId !== null ? { dashboard_id: gateway.dashboardId } : {}),
          };
        }),
      },
    };
  });
}
