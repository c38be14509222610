import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { bindRoute, WireError } from '@conduit/contracts/server';
import { deleteInstallation, registerInstallation, updateInstallation } from '@conduit/contracts/relay/index';
import { newSecret, sha256Hex } from '../domain/credentials.js';
import { mergePreferences, normalizePreferences, type Preferences } from '../domain/preferences.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateDevice, ipOf, limit, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';
import type { GatewayRecord, InstallationRecord } from '../store/records.js';

/** The installation as the app sees it (no token, no secret hash). */
export function publicInstallation(installation: InstallationRecord, gateways: GatewayRecord[]) {
  return {
    id: installation.id,
    active: installation.active,
    gateways: gateways.map((gateway) => ({ id: gateway.id, name: gateway.name })),
    preferences: installation.preferences,
    voip: installation.voipToken !== null,
    watch_voip: installation.watchVoipToken !== null,
    updated_at: new Date(installation.updatedAt).toISOString(),
  };
}

function samePreferences(a: Preferences, b: Preferences): boolean {
  return (Object.keys(a) as (keyof Preferences)[]).every((key) => a[key] === b[key]);
}

export function installationRoutes(app: FastifyInstance, context: RelayContext): void {
  const { limits } = context.config;

  bindRoute(
    app,
    registerInstallation,
    async ({ request, readBody }) => {
      await limit(context, `registration:${ipOf(context, request)}`, FIXED_LIMITS.registrationPerIp);
      // Tokens (normalised), topic, environment, in the reference's order: the contract checks them.
      const body = readBody();
      const deviceToken = body.device_token;
      const voipToken = body.voip_token ?? null;
      const watchVoipToken = body.watch_voip_token ?? null;
      const locationPushToken = body.location_push_token ?? null;
      const now = context.now();
      const secret = newSecret();
      const installation: InstallationRecord = {
        id: randomUUID(),
        bundleId: context.config.apnsTopic,
        deviceToken,
        voipToken,
        watchVoipToken,
        locationPushToken,
        environment: 'production',
        deviceSecretHash: sha256Hex(secret),
        active: true,
        preferences: normalizePreferences(body.preferences),
        createdAt: now,
        updatedAt: now,
        pairedAt: null,
        // Registering is the first sighting: an installation nobody pairs expires a TTL from now.
        lastSeenAt: now,
      };
      // Slots held by installations nobody paired or used are reclaimed before a registration is refused.
      if ((await context.store.countInstallations()) >= limits.maxInstallations) {
        await context.unpaired.sweepAtCapacity();
      }
      await context.store.insertInstallationIfAdmitted(installation, async (count) => {
        // Capacity before the budget: a full relay must not spend the budget others need. The count
        // includes registrations still being written, so racing requests never overshoot the limit.
        if (count >= limits.maxInstallations) throw new WireError(429, 'installation_limit_reached');
        await limit(context, 'registration-global', limits.registrationsPerMinute);
      });
      return {
        status: 201,
        body: {
          installation: publicInstallation(installation, []),
          credential: `${installation.id}.${secret}`,
          relay_url: context.config.publicUrl,
        },
      };
    },
    // bundle_id must be this relay's APNS_TOPIC: checked in its place in the contract's order, after the tokens.
    { readJson, narrowBody: (schema) => schema.extend({ bundle_id: z.literal(context.config.apnsTopic) }) },
  );

  bindRoute(
    app,
    updateInstallation,
    async ({ params, request, readBody }) => {
      const installation = await authenticateDevice(context, request, params.id);
      await limit(context, `installation-update:${installation.id}`, FIXED_LIMITS.installationUpdatePerInstallation);
      const body = readBody();
      // Absent keeps a token, null clears a PushKit or location token (never the device token).
      const deviceToken = body.device_token ?? installation.deviceToken;
      const voip = body.voip_token;
      const watchVoip = body.watch_voip_token;
      const location = body.location_push_token;
      const voipToken = voip === undefined ? installation.voipToken : voip;
      const watchVoipToken = watchVoip === undefined ? installation.watchVoipToken : watchVoip;
      const locationPushToken = location === undefined ? installation.locationPushToken : location;
      const preferences = mergePreferences(installation.preferences, body.preferences);
      const gateways = await context.store.listGateways(installation.id);
      const unchanged =
        deviceToken === installation.deviceToken &&
        voipToken === installation.voipToken &&
        watchVoipToken === installation.watchVoipToken &&
        locationPushToken === installation.locationPushToken &&
        samePreferences(preferences, installation.preferences);
      // A semantic no-op (apps re-send their state on every launch) neither writes nor spends the budget.
      if (unchanged) return { status: 200, body: { installation: publicInstallation(installation, gateways) } };
      await limit(context, 'device-change-global', limits.deviceChangesPerMinute);
      const updated: InstallationRecord = {
        ...installation,
        deviceToken,
        voipToken,
        watchVoipToken,
        locationPushToken,
        preferences,
        updatedAt: context.now(),
      };
      await context.store.updateInstallation(installation.id, {
        deviceToken,
        voipToken,
        watchVoipToken,
        locationPushToken,
        preferences,
        updatedAt: updated.updatedAt,
      });
      return { status: 200, body: { installation: publicInstallation(updated, gateways) } };
    },
    { readJson },
  );

  bindRoute(app, deleteInstallation, async ({ params, request }) => {
    const installation = await authenticateDevice(context, request, params.id);
    await limit(context, 'revocation-global', limits.revocationsPerMinute);
    // Deactivated, not deleted: the slot stays taken (operators reclaim offline, see storage:prune-inactive).
    await context.store.updateInstallation(installation.id, { active: false, updatedAt: context.now() });
    return { status: 204, body: undefined };
  });
}
