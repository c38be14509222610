import type { FastifyInstance } from 'fastify';

/**
 * What the Watch features (tool grants, audio bridge, Live Activities, Maps tokens) need from the
 * relay core, injected by app.ts so these modules never reach into the store directly.
 * Filled in by the Watch work; the relay core passes real implementations.
 */
export interface WatchDeps {
  /** Resolves `Authorization: Bearer <inst>.<gw>.<secret>` to its gateway, or null (401). */
  authenticateGateway(authorization: string | undefined): Promise<{ installationId: string; gatewayId: string } | null>;
}

/** Registers the Watch routes on the relay app. */
export function registerWatchFeatures(app: FastifyInstance, deps: WatchDeps): void {
  void app;
  void deps;
}
