import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { getCapabilities } from '@conduit/contracts/dashboard/capabilities';
import { bindRoute } from '@conduit/contracts/server';
import type { HostConfig } from '../config.js';

/** The capabilities this service serves, in a stable order; grows as route families land. */
export const SERVED_CAPABILITIES: readonly string[] = [];

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
