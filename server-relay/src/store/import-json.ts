import { chmodSync, constants, copyFileSync, readFileSync } from 'node:fs';
import type { Db, Provider } from '@conduit/prisma';
import { FIXED_LIMITS } from '../limits.js';
import { isActive, type DecisionRecord } from '../domain/decisions.js';
import { sanitizeBatchQuestions } from '../domain/events.js';
import { parseDashboardId } from '../domain/pairing-code.js';
import { normalizePreferences } from '../domain/preferences.js';
import { isPlainObject } from '../domain/text.js';
import { bulkInsert, type BulkRow, type BulkTable } from './bulk-insert.js';

/**
 * One-time import of a reference relay's JSON store (DATA_PATH=relay.json), so phones and hosts
 * paired with it keep working: every installation, gateway credential hash, pairing and parked
 * decision. A byte-exact backup of the file is written first; the StoreMeta marker refuses a second
 * import. Event ids are not imported: they only suppress duplicate pushes for 24 h (§2).
 *
 * The reference loads its file without checking records (store.mjs: version 1 and an installations
 * object, then every record as it is), so this import takes every record the reference would load,
 * filling what a record leaves out (bundleId, deviceToken, …) the way the reference then behaves
 * (a missing `active` is inactive, a missing secret never authenticates), and skips only what the
 * reference itself drops on load (expired pairings and decisions) or cannot use at all (a record
 * that is not an object). Skipped records are counted by reason; one bad record never refuses the
 * file.
 */

export const IMPORT_MARKER = 'imported-reference-json';

export class ImportError extends Error {}

/** The file as the reference would load it: version 1 and an installations object. */
export interface ReferenceStore {
  data: Record<string, unknown>;
}

/**
 * Reads and checks a reference store. Throws ImportError with a one-line message (never the file's
 * content) when it cannot be read, is not JSON, or is not a version 1 store with an installations
 * object — the cases the reference refuses too.
 */
export function readReferenceStore(file: string): ReferenceStore {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ImportError(
      code === 'ENOENT' ? `${file} does not exist.` : `${file} could not be read (${code ?? 'error'}).`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ImportError(`${file} is not a reference relay store: it is not valid JSON.`);
  }
  // The reference's own check (store.mjs load), plus storage-status's refusal of a non-object map.
  if (!isPlainObject(data) || data.version !== 1) throw new ImportError('Unsupported relay data format.');
  if (data.installations !== null && !isPlainObject(data.installations)) {
    throw new ImportError('Unsupported relay data format.');
  }
  return { data };
}

/** Reasons a record is skipped, counted in the summary (`skipped.reasons`). */
export const SKIP = {
  installationNotObject: 'installation is not an object',
  gatewaysNotObject: 'gateways of an installation is not an object',
  gatewayNotObject: 'gateway is not an object',
  pairingsNotObject: 'pairings is not an object',
  pairingNotObject: 'pairing is not an object',
  pairingWithoutInstallation: 'pairing names no installation',
  pairingUnknownInstallation: 'pairing of an installation not in the file',
  pairingBadExpiry: 'pairing has no valid expiresAt',
  pairingExpired: 'pairing expired',
  decisionsNotObject: 'pendingDecisions is not an object',
  decisionNotObject: 'decision is not an object',
  decisionWithoutInstallation: 'decision names no installation',
  decisionExpired: 'decision expired',
  decisionDuplicate: 'decision key repeated after re-keying',
  alreadyStored: 'already in the database',
} as const;

export interface ImportSummary {
  installations: number;
  gateways: number;
  pairings: number;
  decisions: number;
  skipped: { total: number; reasons: Record<string, number> };
  backupPath: string;
}

const INSTALLATION: BulkTable = {
  name: 'Installation',
  columns: [
    ['id', 'text'],
    ['bundleId', 'text'],
    ['deviceToken', 'text'],
    ['voipToken', 'text'],
    ['watchVoipToken', 'text'],
    ['locationPushToken', 'text'],
    ['environment', 'text'],
    ['deviceSecretHash', 'text'],
    ['active', 'boolean'],
    ['preferences', 'text'],
    ['createdAt', 'datetime'],
    ['updatedAt', 'datetime'],
    ['pairedAt', 'datetime'],
    ['lastSeenAt', 'datetime'],
  ],
};

const GATEWAY: BulkTable = {
  name: 'Gateway',
  columns: [
    ['installationId', 'text'],
    ['id', 'text'],
    ['name', 'text'],
    ['secretHash', 'text'],
    ['dashboardId', 'text'],
    ['createdAt', 'datetime'],
    ['pluginVersion', 'text'],
    ['pluginCapabilities', 'text'],
    ['lastEventAt', 'datetime'],
  ],
};

const PAIRING: BulkTable = {
  name: 'Pairing',
  columns: [
    ['codeHash', 'text'],
    ['installationId', 'text'],
    ['expiresAt', 'datetime'],
    ['dashboardId', 'text'],
  ],
};

const DECISION: BulkTable = {
  name: 'Decision',
  columns: [
    ['key', 'text'],
    ['installationId', 'text'],
    ['gatewayId', 'text'],
    ['requestId', 'text'],
    ['question', 'text'],
    ['choices', 'text'],
    ['questions', 'text'],
    ['answers', 'text'],
    ['deliverable', 'boolean'],
    ['active', 'boolean'],
    ['createdAt', 'datetime'],
    ['answer', 'text'],
    ['answeredAt', 'datetime'],
    ['cancelledAt', 'datetime'],
  ],
};

/** The rows to insert and what was left out, from a checked store. Pure. */
export interface ImportPlan {
  installations: BulkRow[];
  gateways: BulkRow[];
  pairings: BulkRow[];
  decisions: BulkRow[];
  skipped: Map<string, number>;
}

/** Timestamps in the reference file are ISO strings or ms numbers; anything else is no timestamp. */
function timestampOf(value: unknown): number | undefined {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** A map section: an object, or absent/null (empty). Anything else is counted and read as empty. */
function section(value: unknown, reason: string, skip: (reason: string) => void): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (isPlainObject(value)) return value;
  skip(reason);
  return {};
}

export function planImport(data: Record<string, unknown>, nowMs: number): ImportPlan {
  const plan: ImportPlan = { installations: [], gateways: [], pairings: [], decisions: [], skipped: new Map() };
  const skip = (reason: string): void => void plan.skipped.set(reason, (plan.skipped.get(reason) ?? 0) + 1);
  const installationIds = new Set<string>();

  for (const [id, record] of Object.entries(section(data.installations, SKIP.installationNotObject, skip))) {
    if (!isPlainObject(record)) {
      skip(SKIP.installationNotObject);
      continue;
    }
    // The reference finds an installation by its key (credentials name it), so the key is the id.
    installationIds.add(id);
    const createdAt = timestampOf(record.createdAt) ?? nowMs;
    const gateways = section(record.gateways, SKIP.gatewaysNotObject, skip);
    let paired = false;
    for (const [gatewayId, gateway] of Object.entries(gateways)) {
      if (!isPlainObject(gateway)) {
        skip(SKIP.gatewayNotObject);
        continue;
      }
      paired = true;
      const capabilities = Array.isArray(gateway.pluginCapabilities)
        ? gateway.pluginCapabilities.filter((capability): capability is string => typeof capability === 'string')
        : null;
      plan.gateways.push([
        id,
        gatewayId,
        typeof gateway.name === 'string' && gateway.name !== '' ? gateway.name.slice(0, 80) : 'Hermes gateway',
        // A gateway without a hash never authenticates, at the reference as here; it still counts.
        text(gateway.secretHash) ?? '',
        // The reference heals bad dashboard ids to "unbound" on load; so do we.
        parseDashboardId(gateway.dashboardId) ?? null,
        timestampOf(gateway.createdAt) ?? createdAt,
        typeof gateway.pluginVersion === 'string' ? gateway.pluginVersion.slice(0, 40) : null,
        capabilities ? JSON.stringify(capabilities) : null,
        timestampOf(gateway.lastEventAt) ?? null,
      ]);
    }
    plan.installations.push([
      id,
      // Optional at the reference: a record without them still loads, counts and authenticates.
      text(record.bundleId) ?? '',
      text(record.deviceToken) ?? '',
      text(record.voipToken),
      text(record.watchVoipToken),
      null,
      text(record.environment) ?? 'production',
      text(record.deviceSecretHash) ?? '',
      // The reference treats anything but `true` as inactive (authenticate and storage-status alike).
      record.active === true,
      JSON.stringify(normalizePreferences(record.preferences)),
      createdAt,
      timestampOf(record.updatedAt) ?? createdAt,
      // The reference keeps no pairing date: an installation with a host was paired at registration
      // at the latest. Every imported installation counts as seen now, so none expires as "never
      // paired, not seen" before a full TTL has passed on this relay.
      paired ? createdAt : null,
      nowMs,
    ]);
  }

  for (const [codeHash, pairing] of Object.entries(section(data.pairings, SKIP.pairingsNotObject, skip))) {
    if (!isPlainObject(pairing)) {
      skip(SKIP.pairingNotObject);
      continue;
    }
    if (typeof pairing.installationId !== 'string' || pairing.installationId === '') {
      skip(SKIP.pairingWithoutInstallation);
      continue;
    }
    const expiresAt = timestampOf(pairing.expiresAt);
    // The reference prunes expired codes on load; a code of a missing installation can only ever 404.
    if (expiresAt === undefined) skip(SKIP.pairingBadExpiry);
    else if (expiresAt <= nowMs) skip(SKIP.pairingExpired);
    else if (!installationIds.has(pairing.installationId)) skip(SKIP.pairingUnknownInstallation);
    else
      plan.pairings.push([codeHash, pairing.installationId, expiresAt, parseDashboardId(pairing.dashboardId) ?? null]);
  }

  const decisionKeys = new Set<string>();
  for (const [key, decision] of Object.entries(section(data.pendingDecisions, SKIP.decisionsNotObject, skip))) {
    if (!isPlainObject(decision)) {
      skip(SKIP.decisionNotObject);
      continue;
    }
    if (typeof decision.installationId !== 'string' || decision.installationId === '') {
      skip(SKIP.decisionWithoutInstallation);
      continue;
    }
    // The reference prunes decisions older than the TTL on load; one without a usable createdAt it
    // keeps, and so do we, from now.
    const createdAt = timestampOf(decision.createdAt) ?? nowMs;
    if (createdAt + FIXED_LIMITS.decisionTtlMs <= nowMs) {
      skip(SKIP.decisionExpired);
      continue;
    }
    const gatewayId = text(decision.gatewayId) ?? '';
    // Legacy bare-id records (key = request id) are re-keyed to the scoped key.
    const requestId = text(decision.id) ?? key.slice(key.lastIndexOf(':') + 1);
    const record: DecisionRecord = {
      key: `${decision.installationId}:${gatewayId}:${requestId}`,
      installationId: decision.installationId,
      gatewayId,
      requestId,
      question: text(decision.question) ?? '',
      choices: Array.isArray(decision.choices)
        ? decision.choices.filter((choice): choice is string => typeof choice === 'string')
        : [],
      questions: sanitizeBatchQuestions(decision.questions),
      answers: Object.fromEntries(
        Object.entries(isPlainObject(decision.answers) ? decision.answers : {}).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      ),
      // Legacy records predate the flag: missing means deliverable, as the reference reads it.
      deliverable: decision.deliverable !== false,
      createdAt,
    };
    const answer = text(decision.answer);
    if (answer !== null) record.answer = answer;
    const answeredAt = timestampOf(decision.answeredAt);
    if (answeredAt !== undefined) record.answeredAt = answeredAt;
    const cancelledAt = timestampOf(decision.cancelledAt);
    if (cancelledAt !== undefined) record.cancelledAt = cancelledAt;
    if (decisionKeys.has(record.key)) {
      skip(SKIP.decisionDuplicate);
      continue;
    }
    decisionKeys.add(record.key);
    plan.decisions.push([
      record.key,
      record.installationId,
      record.gatewayId,
      record.requestId,
      record.question,
      JSON.stringify(record.choices),
      JSON.stringify(record.questions),
      JSON.stringify(record.answers),
      record.deliverable,
      isActive(record),
      record.createdAt,
      record.answer ?? null,
      record.answeredAt ?? null,
      record.cancelledAt ?? null,
    ]);
  }
  return plan;
}

export async function alreadyImported(db: Db): Promise<boolean> {
  return (await db.storeMeta.findUnique({ where: { key: IMPORT_MARKER } })) !== null;
}

/**
 * Imports `file` into the (migrated) database of `provider`, in one transaction. Throws ImportError
 * when the database already holds an import or the file is not a reference store.
 */
export async function importReferenceJson(
  db: Db,
  provider: Provider,
  file: string,
  options: { nowMs?: number; /** The file already read with readReferenceStore. */ store?: ReferenceStore } = {},
): Promise<ImportSummary> {
  const nowMs = options.nowMs ?? Date.now();
  if (await alreadyImported(db)) throw new ImportError('This database already holds an imported reference store.');
  const { data } = options.store ?? readReferenceStore(file);
  const plan = planImport(data, nowMs);

  const backupPath = `${file}.backup-${new Date(nowMs).toISOString().replace(/[:.]/g, '-')}`;
  // Exclusive: never overwrite an earlier backup. Byte-exact copy of what was imported.
  copyFileSync(file, backupPath, constants.COPYFILE_EXCL);
  // The copy keeps the source's mode; the store holds credentials' hashes and device tokens.
  chmodSync(backupPath, 0o600);

  const inserted = await db.$transaction(
    async (tx) => {
      // Checked again inside the transaction: two importers racing cannot both succeed.
      if (await tx.storeMeta.findUnique({ where: { key: IMPORT_MARKER } })) {
        throw new ImportError('This database already holds an imported reference store.');
      }
      await tx.storeMeta.create({
        data: { key: IMPORT_MARKER, value: JSON.stringify({ file, backupPath, at: new Date(nowMs).toISOString() }) },
      });
      return {
        installations: await bulkInsert(tx, provider, INSTALLATION, plan.installations),
        gateways: await bulkInsert(tx, provider, GATEWAY, plan.gateways),
        pairings: await bulkInsert(tx, provider, PAIRING, plan.pairings),
        decisions: await bulkInsert(tx, provider, DECISION, plan.decisions),
      };
    },
    { timeout: 10 * 60 * 1000 },
  );
  const alreadyStored =
    plan.installations.length +
    plan.gateways.length +
    plan.pairings.length +
    plan.decisions.length -
    (inserted.installations + inserted.gateways + inserted.pairings + inserted.decisions);
  if (alreadyStored > 0) plan.skipped.set(SKIP.alreadyStored, alreadyStored);
  const reasons = Object.fromEntries(plan.skipped);
  return {
    ...inserted,
    skipped: { total: Object.values(reasons).reduce((sum, count) => sum + count, 0), reasons },
    backupPath,
  };
}
