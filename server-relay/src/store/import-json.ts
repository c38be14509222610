import { chmodSync, constants, copyFileSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Db } from '@conduit/prisma';
import { isActive, type DecisionRecord } from '../domain/decisions.js';
import { sanitizeBatchQuestions } from '../domain/events.js';
import { parseDashboardId } from '../domain/pairing-code.js';
import { normalizePreferences } from '../domain/preferences.js';

/**
 * One-time import of a reference relay's JSON store (DATA_PATH=relay.json), so phones and hosts
 * paired with it keep working: every installation, gateway credential hash, pairing and parked
 * decision. A byte-exact backup of the file is written first; the StoreMeta marker refuses a second
 * import. Event ids are not imported: they only suppress duplicate pushes for 24 h (§2).
 */

export const IMPORT_MARKER = 'imported-reference-json';

export class ImportError extends Error {}

/** Timestamps in the reference file are ISO strings or ms numbers. */
const timestamp = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) {
    ctx.addIssue({ code: 'custom', message: 'bad timestamp' });
    return z.NEVER;
  }
  return ms;
});
const optionalTimestamp = timestamp.optional().nullable();

const gatewaySchema = z.object({
  id: z.string().min(1),
  name: z.string().default('Hermes gateway'),
  secretHash: z.string(),
  dashboardId: z.unknown().optional(),
  createdAt: optionalTimestamp,
  pluginVersion: z.string().optional().nullable(),
  pluginCapabilities: z.array(z.string()).optional().nullable(),
  lastEventAt: optionalTimestamp,
});

const installationSchema = z.object({
  id: z.string().min(1),
  bundleId: z.string(),
  deviceToken: z.string(),
  voipToken: z.string().optional().nullable(),
  watchVoipToken: z.string().optional().nullable(),
  environment: z.string().default('production'),
  deviceSecretHash: z.string(),
  gateways: z.record(z.string(), gatewaySchema).default({}),
  active: z.boolean().default(true),
  preferences: z.unknown().optional(),
  createdAt: optionalTimestamp,
  updatedAt: optionalTimestamp,
});

const decisionSchema = z.object({
  id: z.string().min(1),
  installationId: z.string().min(1),
  gatewayId: z.string().optional().nullable(),
  question: z.string().default(''),
  choices: z.array(z.string()).default([]),
  questions: z.unknown().optional(),
  answers: z.record(z.string(), z.string()).optional().nullable(),
  deliverable: z.boolean().optional(),
  createdAt: timestamp,
  answer: z.string().optional().nullable(),
  answeredAt: optionalTimestamp,
  cancelledAt: optionalTimestamp,
});

export const referenceStoreSchema = z.object({
  version: z.literal(1, { message: 'Unsupported relay data format.' }),
  installations: z.record(z.string(), installationSchema).default({}),
  pairings: z
    .record(
      z.string(),
      z.object({ installationId: z.string(), expiresAt: timestamp, dashboardId: z.unknown().optional() }),
    )
    .default({}),
  pendingDecisions: z.record(z.string(), decisionSchema).default({}),
});

export interface ImportSummary {
  installations: number;
  gateways: number;
  pairings: number;
  decisions: number;
  backupPath: string;
}

export async function alreadyImported(db: Db): Promise<boolean> {
  return (await db.storeMeta.findUnique({ where: { key: IMPORT_MARKER } })) !== null;
}

/** Imports `file` into the (migrated) database. Throws ImportError when already imported or malformed. */
export async function importReferenceJson(db: Db, file: string, nowMs = Date.now()): Promise<ImportSummary> {
  if (await alreadyImported(db)) throw new ImportError('This database already holds an imported reference store.');
  const bytes = readFileSync(file);
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ImportError('The reference store is not valid JSON.');
  }
  if (typeof raw === 'object' && raw !== null && (raw as { version?: unknown }).version !== 1) {
    throw new ImportError('Unsupported relay data format.');
  }
  const parsed = referenceStoreSchema.safeParse(raw);
  if (!parsed.success) throw new ImportError('The reference store is malformed; nothing was imported.');
  const data = parsed.data;

  const backupPath = `${file}.backup-${new Date(nowMs).toISOString().replace(/[:.]/g, '-')}`;
  // Exclusive: never overwrite an earlier backup. Byte-exact copy of what was imported.
  copyFileSync(file, backupPath, constants.COPYFILE_EXCL);
  // The copy keeps the source's mode; the store holds credentials' hashes and device tokens.
  chmodSync(backupPath, 0o600);

  const installations = Object.values(data.installations).map((inst) => ({
    id: inst.id,
    bundleId: inst.bundleId,
    deviceToken: inst.deviceToken,
    voipToken: inst.voipToken ?? null,
    watchVoipToken: inst.watchVoipToken ?? null,
    environment: inst.environment,
    deviceSecretHash: inst.deviceSecretHash,
    active: inst.active,
    preferences: JSON.stringify(normalizePreferences(inst.preferences)),
    createdAt: new Date(inst.createdAt ?? nowMs),
    updatedAt: new Date(inst.updatedAt ?? inst.createdAt ?? nowMs),
    // The reference keeps no pairing date: an installation with a host was paired at registration
    // at the latest. Every imported installation counts as seen now, so none expires as "never
    // paired, not seen" before a full TTL has passed on this relay.
    pairedAt: Object.keys(inst.gateways).length > 0 ? new Date(inst.createdAt ?? nowMs) : null,
    lastSeenAt: new Date(nowMs),
  }));
  const gateways = Object.values(data.installations).flatMap((inst) =>
    Object.values(inst.gateways).map((gw) => ({
      installationId: inst.id,
      id: gw.id,
      name: gw.name.slice(0, 80),
      secretHash: gw.secretHash,
      // The reference heals bad dashboard ids to "unbound" on load; so do we.
      dashboardId: parseDashboardId(gw.dashboardId) ?? null,
      createdAt: new Date(gw.createdAt ?? nowMs),
      pluginVersion: gw.pluginVersion ?? null,
      pluginCapabilities: gw.pluginCapabilities ? JSON.stringify(gw.pluginCapabilities) : null,
      lastEventAt: gw.lastEventAt != null ? new Date(gw.lastEventAt) : null,
    })),
  );
  const pairings = Object.entries(data.pairings).map(([codeHash, pairing]) => ({
    codeHash,
    installationId: pairing.installationId,
    expiresAt: new Date(pairing.expiresAt),
    dashboardId: parseDashboardId(pairing.dashboardId) ?? null,
  }));
  const decisions = Object.values(data.pendingDecisions).map((decision) => {
    const gatewayId = decision.gatewayId ?? '';
    const record: DecisionRecord = {
      // Legacy bare-id records are re-keyed to the scoped key.
      key: `${decision.installationId}:${gatewayId}:${decision.id}`,
      installationId: decision.installationId,
      gatewayId,
      requestId: decision.id,
      question: decision.question,
      choices: decision.choices,
      questions: sanitizeBatchQuestions(decision.questions),
      answers: { ...decision.answers },
      deliverable: decision.deliverable !== false,
      createdAt: decision.createdAt,
    };
    if (decision.answer != null) record.answer = decision.answer;
    if (decision.answeredAt != null) record.answeredAt = decision.answeredAt;
    if (decision.cancelledAt != null) record.cancelledAt = decision.cancelledAt;
    return {
      key: record.key,
      installationId: record.installationId,
      gatewayId: record.gatewayId,
      requestId: record.requestId,
      question: record.question,
      choices: JSON.stringify(record.choices),
      questions: JSON.stringify(record.questions),
      answers: JSON.stringify(record.answers),
      deliverable: record.deliverable,
      active: isActive(record),
      createdAt: new Date(record.createdAt),
      answer: record.answer ?? null,
      answeredAt: record.answeredAt !== undefined ? new Date(record.answeredAt) : null,
      cancelledAt: record.cancelledAt !== undefined ? new Date(record.cancelledAt) : null,
    };
  });

  await db.$transaction(
    async (tx) => {
      // Checked again inside the transaction: two importers racing cannot both succeed.
      if (await tx.storeMeta.findUnique({ where: { key: IMPORT_MARKER } })) {
        throw new ImportError('This database already holds an imported reference store.');
      }
      await tx.storeMeta.create({
        data: { key: IMPORT_MARKER, value: JSON.stringify({ file, backupPath, at: new Date(nowMs).toISOString() }) },
      });
      for (let i = 0; i < installations.length; i += 1000) {
        await tx.installation.createMany({ data: installations.slice(i, i + 1000) });
      }
      for (let i = 0; i < gateways.length; i += 1000)
        await tx.gateway.createMany({ data: gateways.slice(i, i + 1000) });
      if (pairings.length > 0) await tx.pairing.createMany({ data: pairings });
      if (decisions.length > 0) await tx.decision.createMany({ data: decisions });
    },
    { timeout: 10 * 60 * 1000 },
  );
  return {
    installations: installations.length,
    gateways: gateways.length,
    pairings: pairings.length,
    decisions: decisions.length,
    backupPath,
  };
}
