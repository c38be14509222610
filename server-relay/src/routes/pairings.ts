import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { bindRoute, WireError } from '@conduit/contracts/server';
import { claimPairing, createPairing, revokeCurrentGateway } from '@conduit/contracts/relay/index';
import { newSecret, sha256Hex } from '../domain/credentials.js';
import { newPairingCode, pairingCodeHash, parseDashboardId } from '../domain/pairing-code.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateDevice, authenticateGateway, ipOf, limit, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';
import type { GatewayRecord } from '../store/records.js';
import { GatewayLimitReached } from '../store/relay-store.js';

/**
 * The claim, with the gateway count checked again inside it: the check above reads the credential
 * index, which another replica's claim reaches only after its commit, and two claims of one
 * installation may race. The store counts under a lock, so the limit holds on any number of processes.
 */
async function claimWithinCapacity(context: RelayContext, codeHash: string, gateway: GatewayRecord): Promise<boolean> {
  try {
    return await context.store.claimPairing(codeHash, gateway, context.config.limits.maxGatewaysPerInstallation);
  } catch (error) {
    if (error instanceof GatewayLimitReached) throw new WireError(429, 'gateway_limit_reached');
    throw error;
  }
}

export function pairingRoutes(app: FastifyInstance, context: RelayContext): void {
  const { limits } = context.config;

  bindRoute(
    app,
    createPairing,
    async ({ params, request, readBody }) => {
      const installation = await authenticateDevice(context, request, params.id);
      await limit(context, `pairing:${installation.id}`, FIXED_LIMITS.pairingPerInstallation);
      // A canonical (lowercase) UUID, or null for none.
      const dashboardId = readBody().dashboard_id ?? null;
      await limit(context, 'device-change-global', limits.deviceChangesPerMinute);
      const code = newPairingCode(context.random);
      const codeHash = pairingCodeHash(code);
      if (!codeHash) throw new Error('pairing code did not normalise');
      const expiresAt = context.now() + FIXED_LIMITS.pairingTtlMs;
      await context.store.replacePairing({ codeHash, installationId: installation.id, expiresAt, dashboardId });
      return { status: 201, body: { pairing_code: code, expires_at: new Date(expiresAt).toISOString() } };
    },
    { readJson },
  );

  bindRoute(
    app,
    claimPairing,
    async ({ request, readBody }) => {
      await limit(context, `claim:${ipOf(context, request)}`, FIXED_LIMITS.claimPerIp);
      const body = readBody();
      const codeHash = pairingCodeHash(body.pairing_code);
      const pairing = codeHash ? await context.store.findPairing(codeHash) : null;
      if (!codeHash || !pairing) throw new WireError(404, 'invalid_or_expired_pairing');
      if (pairing.expiresAt <= context.now()) {
        await context.store.deletePairing(codeHash);
        throw new WireError(404, 'invalid_or_expired_pairing');
      }
      // Both reads at once (one round trip less on PostgreSQL); the count is only used for an active phone.
      const [installation, gatewayCount] = await Promise.all([
        context.store.findInstallation(pairing.installationId),
        context.store.countGateways(pairing.installationId),
      ]);
      if (!installation?.active) {
        // The code is spent either way: a deactivated phone must pair again from scratch.
        await context.store.deletePairing(codeHash);
        throw new WireError(404, 'invalid_or_expired_pairing');
      }
      // Capacity before the budget; the code is kept so the phone can free a slot and retry.
      if (gatewayCount >= limits.maxGatewaysPerInstallation) {
        throw new WireError(429, 'gateway_limit_reached');
      }
      await limit(context, 'device-change-global', limits.deviceChangesPerMinute);
      const name = (body.gateway_name ?? 'Hermes gateway').slice(0, 80);
      const secret = newSecret();
      const gatewayId = randomUUID();
      const claimed = await claimWithinCapacity(context, codeHash, {
        installationId: installation.id,
        id: gatewayId,
        name,
        secretHash: sha256Hex(secret),
        // The binding is re-validated: a stored value that no longer parses leaves the gateway unbound.
        dashboardId: parseDashboardId(pairing.dashboardId) ?? null,
        createdAt: context.now(),
        pluginVersion: null,
        pluginCapabilities: null,
        lastEventAt: null,
      });
      if (!claimed) throw new WireError(404, 'invalid_or_expired_pairing');
      return {
        status: 200,
        body: {
          installation_id: installation.id,
          gateway_id: gatewayId,
          credential: `${installation.id}.${gatewayId}.${secret}`,
          relay_url: context.config.publicUrl,
        },
      };
    },
    { readJson },
  );

  bindRoute(app, revokeCurrentGateway, async ({ request }) => {
    const { installation, gateway } = await authenticateGateway(context, request);
    await limit(context, 'revocation-global', limits.revocationsPerMinute);
    await context.store.deleteGateway(installation.id, gateway.id);
    return { status: 204, body: undefined };
  });
}
