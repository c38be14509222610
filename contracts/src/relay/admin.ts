import { z } from 'zod';
import { defineProcedure, type ControlSurface } from '../control/procedures.js';

/**
 * The relay's admin API (tRPC, off unless ADMIN_TOKEN is set): what the storage CLIs do, lookups and
 * revocation by id, and the limits in force. Outputs carry counts and non-secret fields only: never a
 * token hash, a device or VoIP token, or a credential.
 */

export const RELAY_ADMIN_PREFIX = '/admin/trpc';

const count = z.number().int().nonnegative();
/** Milliseconds since the epoch. */
const timeMs = z.number().int();
const installationId = z.string().min(1).max(128);
const gatewayId = z.string().min(1).max(128);

/** `storage:status`: the reference's `{installations: {total, active, inactive, capacity}}` plus `expired`. */
export const storageStatusOutput = z.object({
  installations: z.object({
    total: count,
    active: count,
    inactive: count,
    capacity: count,
    expired: count,
  }),
});

/** `storage:prune-inactive`: the reference's `{eligible, removed, remaining}`. */
export const pruneResult = z.object({
  eligible: count,
  removed: count,
  remaining: count,
  /** Where apply wrote its 0600 backup of the removed rows (on the relay's machine). */
  backupPath: z.string().optional(),
});

export const gatewaySummary = z.object({
  installationId: z.string(),
  id: z.string(),
  name: z.string(),
  createdAtMs: timeMs,
  pluginVersion: z.string().nullable(),
  pluginCapabilities: z.array(z.string()).nullable(),
  lastEventAtMs: timeMs.nullable(),
});

export const installationSummary = z.object({
  id: z.string(),
  bundleId: z.string(),
  environment: z.string(),
  active: z.boolean(),
  createdAtMs: timeMs,
  updatedAtMs: timeMs,
  pairedAtMs: timeMs.nullable(),
  lastSeenAtMs: timeMs.nullable(),
  /** Which optional APNs tokens the phone registered (presence only, never the token). */
  tokens: z.object({ voip: z.boolean(), watchVoip: z.boolean(), locationPush: z.boolean() }),
  gatewayCount: count,
  gateways: z.array(gatewaySummary),
});

export const limitInForce = z.object({
  /** The limits table's name (`maxInstallations`). */
  name: z.string(),
  /** The environment variable that changes it. */
  env: z.string(),
  value: z.number(),
  default: z.number(),
});

export const relayAdminProcedures = {
  storageStatus: defineProcedure({
    kind: 'query',
    summary: 'Installation counts (what storage:status prints)',
    input: z.void(),
    output: storageStatusOutput,
  }),
  prunePreview: defineProcedure({
    kind: 'query',
    summary: 'How many installations storage:prune-inactive would remove (removes none)',
    input: z.void(),
    output: pruneResult,
  }),
  pruneApply: defineProcedure({
    kind: 'mutation',
    summary:
      'Removes the eligible installations after a backup. Refused (CONFLICT) unless expectEligible is what a preview just counted',
    input: z.object({ expectEligible: count }),
    output: pruneResult,
  }),
  installation: defineProcedure({
    kind: 'query',
    summary: 'One installation and its gateways by id (NOT_FOUND when unknown)',
    input: z.object({ installationId }),
    output: installationSummary,
  }),
  gateway: defineProcedure({
    kind: 'query',
    summary: 'One gateway by installation and gateway id (NOT_FOUND when unknown)',
    input: z.object({ installationId, gatewayId }),
    output: gatewaySummary,
  }),
  revokeInstallation: defineProcedure({
    kind: 'mutation',
    summary: 'Deactivates an installation as its own DELETE does: its device and gateway credentials stop working',
    input: z.object({ installationId }),
    output: z.object({ revoked: z.boolean() }),
  }),
  revokeGateway: defineProcedure({
    kind: 'mutation',
    summary: 'Removes one gateway: its credential stops working',
    input: z.object({ installationId, gatewayId }),
    output: z.object({ revoked: z.boolean() }),
  }),
  limits: defineProcedure({
    kind: 'query',
    summary: 'The limits table as this process reads it (value in force, default, variable)',
    input: z.void(),
    output: z.object({
      limits: z.array(limitInForce),
      /** Bounds that no variable changes. */
      fixed: z.record(z.string(), z.number()),
    }),
  }),
};

export const relayAdminSurface: ControlSurface = {
  name: 'relay-admin',
  title: 'Conduit relay admin API (tRPC)',
  prefix: RELAY_ADMIN_PREFIX,
  procedures: relayAdminProcedures,
};
