import type { FastifyInstance } from 'fastify';
import { getCapabilities } from '@conduit/contracts/dashboard/capabilities';
import { bindRoute } from '@conduit/contracts/server';
import type { HostConfig } from '../config.js';
import type { FeatureCapability, HostFeature } from '../kernel/feature.js';

/**
 * The capabilities of the service's core (not yet features), each with the path its route family
 * answers on (a test checks every one is really served). Only what works here is listed, so the
 * Conduit app never offers a screen this host cannot back.
 */
export const CAPABILITY_PATHS = {
  'e2e-notifications': { method: 'GET', path: '/api/plugins/conduit_push/e2e' },
  'cron-notifications': { method: 'GET', path: '/api/plugins/conduit_push/cron/notifications' },
  'reply-sources': { method: 'GET', path: '/api/plugins/conduit_push/notifications/reply-sources' },
  'approval-answers': { method: 'POST', path: '/api/plugins/conduit_push/approvals/respond' },
  pairing: { method: 'POST', path: '/api/plugins/conduit_push/pair' },
} as const;

/** Listed only where this process can really restart itself (routes/self-restart.ts). */
export const SELF_RESTART_CAPABILITY: FeatureCapability = {
  name: 'self-restart',
  method: 'POST',
  path: '/api/plugins/conduit_push/self/restart',
};

/** The reference plugin's `ROUTE_CAPABILITIES`, in its order (ROUTES.md, Capabilities). */
const REFERENCE_ORDER = [
  'gemini-live',
  'web-search',
  'memory',
  'personality',
  'gpt-live',
  'grok-live',
  'voice-sessions',
  'voice-tags',
  'voice-summary',
  'session-takeover',
  'e2e-notifications',
  'watch-tools',
  'watch-jobs',
  'watch-job-follow-ups',
  'watch-live-token',
  'watch-audio',
  'desktop-views',
  'hermes-calls',
  'hermes-call-presence',
  'hermes-call-outcomes',
];

/**
 * Everything the service serves, in a stable order: the reference's capabilities in its order, then
 * the others (the later seed's, this host's) in the order they are registered. A feature is listed
 * whether or not its provider is configured; its status route says whether it is available.
 */
export function servedCapabilities(
  features: readonly HostFeature[],
  conditional: readonly FeatureCapability[] = [],
): FeatureCapability[] {
  const core = [...Object.entries(CAPABILITY_PATHS).map(([name, route]) => ({ name, ...route })), ...conditional];
  const all = [...features.flatMap((feature) => feature.capabilities), ...core];
  const rank = (name: string): number => {
    const index = REFERENCE_ORDER.indexOf(name);
    return index === -1 ? REFERENCE_ORDER.length : index;
  };
  // Array.prototype.sort is stable: the others keep their registration order.
  return all.sort((a, b) => rank(a.name) - rank(b.name));
}

/**
 * A capability that is no route of this host but something it does through others, listed only while
 * it works right now (asked at each request): `live-activities` needs a pairing and a relay that takes
 * the reports (features/live-activities/capability.ts).
 */
export interface WorkingCapability {
  name: string;
  working(): Promise<boolean>;
}

export function capabilityRoutes(
  app: FastifyInstance,
  config: HostConfig,
  features: readonly HostFeature[],
  options: { bootId: string; canRestart: boolean; whenWorking?: readonly WorkingCapability[] },
): void {
  const { bootId } = options;
  const served = servedCapabilities(features, options.canRestart ? [SELF_RESTART_CAPABILITY] : []).map(
    (capability) => capability.name,
  );
  const whenWorking = options.whenWorking ?? [];
  bindRoute(app, getCapabilities, async () => {
    // A check that asks another service (the relay) is given a moment, never the whole answer: a slow
    // relay leaves its capability out of this answer, and the check it started answers the next one.
    const working = await Promise.all(
      whenWorking.map(async (capability) =>
        (await withinMoment(capability.working().catch(() => false))) ? [capability.name] : [],
      ),
    );
    const version = config.readDiskVersion();
    return {
      status: 200,
      body: {
        ok: true,
        version,
        loaded_version: config.loadedVersion,
        restart_needed: version !== null && version !== config.loadedVersion,
        boot_id: bootId,
        capabilities: [...served, ...working.flat()],
      },
      headers: { 'Cache-Control': 'no-store' },
    };
  });
}

/** How long GET /capabilities waits for a check that asks another service. */
const WORKING_CHECK_MS = 1500;

function withinMoment(check: Promise<boolean>): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), WORKING_CHECK_MS);
    timer.unref();
    void check.then((working) => {
      clearTimeout(timer);
      resolve(working);
    });
  });
}
