import { WireError } from '@conduit/contracts/server';
import { FIXED_LIMITS } from '../limits.js';
import type { RelayContext } from '../relay-context.js';

/**
 * 429 decision_capacity_exceeded when parking one more decision would pass a bound: active and
 * retained (settled records still within their 2 h TTL count), per installation and relay-wide.
 */
export async function assertDecisionCapacity(context: RelayContext, installationId: string): Promise<void> {
  const sinceMs = context.now() - FIXED_LIMITS.decisionTtlMs;
  const { limits } = context.config;
  const [active, retained, ownActive, ownRetained] = await Promise.all([
    context.store.countDecisions({ sinceMs, active: true }),
    context.store.countDecisions({ sinceMs }),
    context.store.countDecisions({ sinceMs, installationId, active: true }),
    context.store.countDecisions({ sinceMs, installationId }),
  ]);
  if (
    active >= limits.maxActiveDecisions ||
    retained >= limits.maxRetainedDecisions ||
    ownActive >= FIXED_LIMITS.maxActiveDecisionsPerInstallation ||
    ownRetained >= FIXED_LIMITS.maxRetainedDecisionsPerInstallation
  ) {
    throw new WireError(429, 'decision_capacity_exceeded');
  }
}
