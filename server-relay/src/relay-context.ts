import type { FastifyRequest } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import type { ApnsSender } from './apns/types.js';
import type { RelayConfig } from './config.js';
import { parseDeviceAuthorization, parseGatewayAuthorization, secretMatches } from './domain/credentials.js';
import type { EventLedger } from './ephemeral/event-ledger.js';
import type { RateLimiter } from './ephemeral/rate-limiter.js';
import type { RingSessionStore } from './ephemeral/ring-sessions.js';
import type { RingRegistry } from './ephemeral/rings.js';
import { clientAddress } from './http/client-ip.js';
import type { DeferredActivity } from './store/deferred-activity.js';
import type { GatewayRecord, InstallationRecord } from './store/records.js';
import type { RelayStore } from './store/relay-store.js';
import type { UnpairedExpiry } from './store/unpaired-expiry.js';

/**
 * Operational log lines (never a secret, token or payload), written as the reference writes them:
 * one JSON object `{level, message, ...fields}` per line. Operators alert on these texts and fields,
 * so a line the reference has keeps its `message` and field names; extra fields may be added.
 */
export type RelayLog = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** Everything a route family needs, built once per app by buildApp. */
export interface RelayContext {
  config: RelayConfig;
  store: RelayStore;
  limiter: RateLimiter;
  ledger: EventLedger;
  rings: RingRegistry;
  ringSessions: RingSessionStore;
  apns: ApnsSender;
  activity: DeferredActivity;
  now: () => number;
  random: (size: number) => Buffer;
  log: RelayLog;
  /** Serialises decision capacity checks with the save that follows (the reference has no await between them). */
  decisionLock: <T>(work: () => Promise<T>) => Promise<T>;
  /** Expiry of installations nobody paired: stamps device use, reclaims capacity. */
  unpaired: UnpairedExpiry;
}

export function ipOf(context: RelayContext, request: FastifyRequest): string {
  return clientAddress(request.raw, context.config.trustedProxyHops);
}

/** 429 rate_limited when the key is over its window (503 when the replicas' shared store is down). */
export async function limit(context: RelayContext, key: string, max: number, windowMs?: number): Promise<void> {
  if (!(await context.limiter.hit(key, max, windowMs))) throw new WireError(429, 'rate_limited');
}

function authorization(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return typeof header === 'string' ? header : undefined;
}

/** Device credential → its active installation, or null. */
export async function findDevice(
  context: RelayContext,
  header: string | undefined,
): Promise<InstallationRecord | null> {
  const credential = parseDeviceAuthorization(header);
  if (!credential) return null;
  const installation = await context.store.findInstallation(credential.installationId);
  if (!installation?.active || !secretMatches(credential.secret, installation.deviceSecretHash)) return null;
  // The phone is in use: an installation not yet paired must not expire under it.
  await context.unpaired.noteSeen(installation);
  return installation;
}

/** Device credential for `/v1/installations/:id…`: the credential's installation must be the path's. */
export async function authenticateDevice(
  context: RelayContext,
  request: FastifyRequest,
  pathId?: string,
): Promise<InstallationRecord> {
  const installation = await findDevice(context, authorization(request));
  if (!installation || (pathId !== undefined && installation.id !== pathId)) throw new WireError(401, 'unauthorized');
  return installation;
}

export interface AuthenticatedGateway {
  installation: InstallationRecord;
  gateway: GatewayRecord;
}

export async function findGateway(
  context: RelayContext,
  header: string | undefined,
): Promise<AuthenticatedGateway | null> {
  const credential = parseGatewayAuthorization(header);
  if (!credential) return null;
  // One after the other: both are answered from the credential index, where Promise.all's extra
  // promises cost more than the lookups; the gateway is not looked up for an inactive installation.
  const installation = await context.store.findInstallation(credential.installationId);
  if (!installation?.active) return null;
  const gateway = await context.store.findGateway(credential.installationId, credential.gatewayId);
  if (!gateway || !secretMatches(credential.secret, gateway.secretHash)) return null;
  return { installation, gateway };
}

export async function authenticateGateway(
  context: RelayContext,
  request: FastifyRequest,
): Promise<AuthenticatedGateway> {
  const found = await findGateway(context, authorization(request));
  if (!found) throw new WireError(401, 'unauthorized');
  return found;
}
