import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { getCapabilities } from '@conduit/contracts/dashboard/capabilities';
import { bindRoute } from '@conduit/contracts/server';
import type { HostConfig } from '../config.js';

/**
 * The capabilities this service serves, in a stable order, each with the path its route family
 * answers on (a test checks every one is really served). Only what works here is listed, so the
 * Conduit app never offers a screen this host cannot back.
 */
export const CAPABILITY_PATHS = {
  'e2e-notifications': { method: 'GET', path: '/api/plugins/conduit_push/e2e' },
  'cron-notifications': { method: 'GET', path: '/api/plugins/conduit_push/cron/notifications' },
  'reply-sources': { method: 'GET', path: '/api/plugins/conduit_push/notifications/reply-sources' },
  'approval-answers': { method: 'POST', path: '/api/plugins/conduit_push/approvals/respond' },
} as const;

export const SERVED_CAPABILITIES: readonly string[] = Object.keys(CAPABILITY_PATHS);

export function capabilityRoutes(app: FastifyInstance, config: HostConfig): void {
  const bootId = randomUUID();
  bindRoute(app, getCapabilities, () => {
    const version = config.readDiskVersion();
    return {
      status: 200,
      body: {
        ok: true,
        version,
        loaded_version: config.loadedVersion,
        restart_needed: version !== null && version !== config.loadedVersion,
        boot_id: bootId,
        capabilities: [...SERVED_CAPABILITIES],
      },
    };
  });
}
