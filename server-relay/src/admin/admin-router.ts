import path from 'node:path';
import { initTRPC, TRPCError } from '@trpc/server';
import { relayAdminProcedures as c } from '@conduit/contracts/relay/admin';
import type { Db } from '@conduit/prisma';
import { pruneInactive, storageStatus } from '../cli/storage.js';
import type { RelayConfig } from '../config.js';
import { FIXED_LIMITS, LIMIT_TABLE, type LimitName } from '../limits.js';
import type { GatewayRecord, InstallationRecord } from '../store/records.js';
import type { RelayStore } from '../store/relay-store.js';

/** What the admin API works on: the app's store (its credential index in front) and the database beneath it. */
export interface RelayAdminDeps {
  config: RelayConfig;
  /** The store every route uses (credential index in front), so a revocation is seen by the next request. */
  store: RelayStore;
  /** The Prisma database, for the storage maintenance the CLIs run offline. */
  db: Db;
  /** Rows removed behind the store (prune): the credential index is loaded again. */
  forgetInstallations: () => void;
  now: () => number;
}

const t = initTRPC.create();

function gatewaySummary(gateway: GatewayRecord) {
  // Field by field, never a spread: the record holds the credential's hash.
  return {
    installationId: gateway.installationId,
    id: gateway.id,
    name: gateway.name,
    createdAtMs: gateway.createdAt,
    pluginVersion: gateway.pluginVersion,
    pluginCapabilities: gateway.pluginCapabilities,
    lastEventAtMs: gateway.lastEventAt,
  };
}

function installationSummary(installation: InstallationRecord, gateways: GatewayRecord[]) {
  // Presence of the APNs tokens only: a device token lets anyone holding the relay's key push to the phone.
  return {
    id: installation.id,
    bundleId: installation.bundleId,
    environment: installation.environment,
    active: installation.active,
    createdAtMs: installation.createdAt,
    updatedAtMs: installation.updatedAt,
    pairedAtMs: installation.pairedAt,
    lastSeenAtMs: installation.lastSeenAt,
    tokens: {
      voip: installation.voipToken !== null,
      watchVoip: installation.watchVoipToken !== null,
      locationPush: installation.locationPushToken !== null,
    },
    gatewayCount: gateways.length,
    gateways: gateways.map(gatewaySummary),
  };
}

/** Prune backups go beside the SQLite file, or in DATA_PATH's folder with PostgreSQL, as the CLI writes them. */
function backupFolder(config: RelayConfig): string {
  const url = config.databaseUrl;
  return /^postgres(ql)?:/i.test(url) ? path.dirname(path.resolve(config.dataPath)) : path.dirname(path.resolve(url));
}

/**
 * The relay admin router. Every procedure is built from its declaration in
 * contracts/src/relay/admin.ts (input and output schemas), so the locked snapshot is what it answers.
 */
export function relayAdminRouter(deps: RelayAdminDeps) {
  const { store, db, config } = deps;
  const prune = (apply: boolean) =>
    pruneInactive(db, {
      apply,
      // The running relay is the one writer, and the delete re-checks every row's eligibility in its
      // transaction, so a phone that comes back meanwhile keeps its row.
      relayStopped: true,
      backupDir: backupFolder(config),
      nowMs: deps.now(),
    });
  return t.router({
    storageStatus: t.procedure
      .input(c.storageStatus.input)
      .output(c.storageStatus.output)
      .query(() => storageStatus(db, config.limits.maxInstallations)),
    prunePreview: t.procedure
      .input(c.prunePreview.input)
      .output(c.prunePreview.output)
      .query(() => prune(false)),
    pruneApply: t.procedure
      .input(c.pruneApply.input)
      .output(c.pruneApply.output)
      .mutation(async ({ input }) => {
        // Preview first: the operator confirms the number they saw, so nothing unexpected goes.
        const preview = await prune(false);
        if (preview.eligible !== input.expectEligible) {
          throw new TRPCError({
            code: 'CONFLICT',
            message: `${preview.eligible} installations are eligible now, not ${input.expectEligible}; preview again.`,
          });
        }
        if (preview.eligible === 0) return preview;
        try {
          return await prune(true);
        } finally {
          deps.forgetInstallations();
        }
      }),
    installation: t.procedure
      .input(c.installation.input)
      .output(c.installation.output)
      .query(async ({ input }) => {
        const installation = await store.findInstallation(input.installationId);
        if (!installation) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such installation' });
        return installationSummary(installation, await store.listGateways(installation.id));
      }),
    gateway: t.procedure
      .input(c.gateway.input)
      .output(c.gateway.output)
      .query(async ({ input }) => {
        const gateway = await store.findGateway(input.installationId, input.gatewayId);
        if (!gateway) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such gateway' });
        return gatewaySummary(gateway);
      }),
    revokeInstallation: t.procedure
      .input(c.revokeInstallation.input)
      .output(c.revokeInstallation.output)
      .mutation(async ({ input }) => {
        const installation = await store.findInstallation(input.installationId);
        if (!installation) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such installation' });
        if (!installation.active) return { revoked: false };
        // As the phone's own DELETE: deactivated, the slot kept until a prune reclaims it.
        await store.updateInstallation(installation.id, { active: false, updatedAt: deps.now() });
        return { revoked: true };
      }),
    revokeGateway: t.procedure
      .input(c.revokeGateway.input)
      .output(c.revokeGateway.output)
      .mutation(async ({ input }) => {
        const gateway = await store.findGateway(input.installationId, input.gatewayId);
        if (!gateway) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such gateway' });
        await store.deleteGateway(gateway.installationId, gateway.id);
        return { revoked: true };
      }),
    limits: t.procedure
      .input(c.limits.input)
      .output(c.limits.output)
      .query(() => ({
        limits: (Object.keys(LIMIT_TABLE) as LimitName[]).map((name) => ({
          name,
          env: LIMIT_TABLE[name].env,
          value: config.limits[name],
          default: LIMIT_TABLE[name].default,
        })),
        fixed: Object.fromEntries(
          Object.entries(FIXED_LIMITS).filter((entry): entry is [string, number] => typeof entry[1] === 'number'),
        ),
      })),
  });
}

/** The admin API's type: what `@trpc/client` in the storage CLIs is typed by. */
export type RelayAdminRouter = ReturnType<typeof relayAdminRouter>;
