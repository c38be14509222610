import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  CONDUIT_SETTINGS_LIMITS,
  CONDUIT_SETTINGS_MODES,
  CONDUIT_SETTINGS_OUTCOMES,
  conduitSettingValue,
  conduitSharedSetting,
  type ConduitSettingValue,
  type ConduitSettingsRequest,
  type PutConduitSettingsRequest,
} from '@conduit/contracts/dashboard/conduit-settings';
import { LockedJsonStore } from '../../state/json-state-file.js';
import { isHermesSetting } from './hermes-settings.js';

/**
 * A profile's settings requests, `<home>/conduit-settings.json` (mode 0600, written whole to a
 * temporary file and renamed): what each Conduit shares and its mode, as of its last upload, and the
 * changes Hermes asked for with their outcomes. The tool and the upload route change it under one lock
 * file. Times are Unix seconds.
 */
export const SETTINGS_FILE = 'conduit-settings.json';

/** The bounds of the store that are the host's own (the seed's are CONDUIT_SETTINGS_LIMITS). */
export const SETTINGS_STORE_LIMITS = {
  /**
   * A device that has not uploaded for 30 days is forgotten (with its open requests), so a phone that
   * was replaced does not hold one of the 8 places for ever.
   */
  deviceForgottenAfterS: 30 * 24 * 3600,
  /**
   * Finished requests are kept a week, so a later turn can still learn what the user did, and so the
   * hourly count always has the last hour's requests.
   */
  finishedKeptS: 7 * 24 * 3600,
  /** Finished requests kept at most, newest first: 20 an hour for 8 devices for a week would be thousands. */
  finishedKept: 300,
} as const;

/** Where a request is: open (`waiting`, `picked_up`) or finished (Conduit's outcomes and the host's own). */
export const REQUEST_STATES = ['waiting', 'picked_up', ...CONDUIT_SETTINGS_OUTCOMES, 'expired', 'cancelled'] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

const OPEN_STATES: readonly RequestState[] = ['waiting', 'picked_up'];
export const isOpen = (state: RequestState): boolean => OPEN_STATES.includes(state);

const deviceShape = z.object({
  installation_id: z.string(),
  device: z.string(),
  app_version: z.string(),
  mode: z.enum(CONDUIT_SETTINGS_MODES),
  settings: z.array(conduitSharedSetting),
  synced_at: z.number(),
});
export type SettingsDevice = z.infer<typeof deviceShape>;

const requestShape = z.object({
  id: z.string(),
  installation_id: z.string(),
  key: z.string(),
  value: conduitSettingValue,
  seen_value: conduitSettingValue,
  reason: z.string(),
  session_id: z.string(),
  /** The Hermes turn that asked (the hook's turn id), for the per-call bound; null when Hermes gave none. */
  turn_id: z.string().nullable(),
  requested_at: z.number(),
  expires_at: z.number(),
  state: z.enum(REQUEST_STATES),
  /** When Conduit first took it in an upload's answer; null before. */
  picked_up_at: z.number().nullable().default(null),
  /** When it finished (an outcome, expiry, cancel); null while open. */
  finished_at: z.number().nullable().default(null),
  /** The value in force after the outcome, as Conduit reported it. */
  outcome_value: conduitSettingValue.nullable().default(null),
  /** Conduit's words about the outcome, or the host's reason for refusing or cancelling it. */
  note: z.string().nullable().default(null),
  /** Whether Hermes has been told the finished state (get shows each outcome once). */
  seen: z.boolean().default(false),
});
export type StoredRequest = z.infer<typeof requestShape>;

/** The file; fields this version does not know are kept as they are. */
const settingsFileShape = z.looseObject({
  v: z.literal(1),
  devices: z.array(deviceShape).default([]),
  requests: z.array(requestShape).default([]),
});
export type SettingsFile = z.infer<typeof settingsFileShape>;

function emptyFile(): SettingsFile {
  return { v: 1, devices: [], requests: [] };
}

/** A new request id: 24 lowercase hex digits. */
export function newRequestId(): string {
  return randomBytes(12).toString('hex');
}

/**
 * How the model names a device: 12 hex digits derived from its installation id, so the id Conduit
 * uses with the relay never goes to the model's provider, and the name stays the same across uploads.
 */
export function deviceHandle(installationId: string): string {
  return createHash('sha256').update(`conduit-settings:${installationId}`).digest('hex').slice(0, 12);
}

/**
 * Expiry and the sweep, applied to every read: an open request past its day becomes `expired`
 * (finished at its expiry); finished requests older than a week go, and so do devices silent for 30
 * days with their open requests. A full pass rather than stopping at the first live request: a clock
 * step backwards can leave an expired request behind a newer one. Returns the same object when
 * nothing changed.
 */
export function settle(file: SettingsFile, nowS: number): SettingsFile {
  const devices = file.devices.filter(
    (device) => device.synced_at > nowS - SETTINGS_STORE_LIMITS.deviceForgottenAfterS,
  );
  const known = new Set(devices.map((device) => device.installation_id));
  let changed = devices.length !== file.devices.length;
  const requests: StoredRequest[] = [];
  for (const request of file.requests) {
    if (isOpen(request.state) && !known.has(request.installation_id)) {
      changed = true;
    } else if (isOpen(request.state) && request.expires_at <= nowS) {
      requests.push({ ...request, state: 'expired', finished_at: request.expires_at, seen: false });
      changed = true;
    } else if (
      !isOpen(request.state) &&
      (request.finished_at ?? request.requested_at) <= nowS - SETTINGS_STORE_LIMITS.finishedKeptS
    ) {
      changed = true;
    } else {
      requests.push(request);
    }
  }
  const finished = requests.filter((request) => !isOpen(request.state));
  if (finished.length > SETTINGS_STORE_LIMITS.finishedKept) {
    const dropped = new Set(
      [...finished]
        .sort((a, b) => (b.finished_at ?? 0) - (a.finished_at ?? 0))
        .slice(SETTINGS_STORE_LIMITS.finishedKept)
        .map((request) => request.id),
    );
    return { ...file, devices, requests: requests.filter((request) => !dropped.has(request.id)) };
  }
  return changed ? { ...file, devices, requests } : file;
}

/** Finishes a request (the host's own outcome or Conduit's). */
function finished(
  request: StoredRequest,
  state: RequestState,
  nowS: number,
  extra: { note?: string | null; outcomeValue?: ConduitSettingValue | null; seen?: boolean } = {},
): StoredRequest {
  return {
    ...request,
    state,
    finished_at: Math.floor(nowS),
    note: extra.note ?? null,
    outcome_value: extra.outcomeValue ?? null,
    seen: extra.seen ?? false,
  };
}

export type UploadRefusal = { reason: 'device_limit'; message: string };

export interface UploadResult {
  requests: ConduitSettingsRequest[];
  ignoredKeys: string[];
  /** Outcomes recorded from this upload. */
  recorded: number;
  /** Requests the host settled itself (mode off, a key no longer shared, a value no longer offered). */
  refused: number;
}

/** A request as the device picks it up. */
function forDevice(request: StoredRequest): ConduitSettingsRequest {
  return {
    id: request.id,
    key: request.key,
    value: request.value,
    seen_value: request.seen_value,
    reason: request.reason,
    session_id: request.session_id,
    requested_at: request.requested_at,
    expires_at: request.expires_at,
  };
}

/**
 * One upload of a Conduit, in this order: its outcomes first (they are about requests handed over
 * before), then what it shares and its mode, then the open requests checked against those, and the
 * ones left handed over. Pure.
 *
 * - An outcome counts for a request of this device that Conduit has been handed (open, expired after
 *   it was picked up, or finished by an earlier outcome, e.g. `applied` then `undone`); outcomes for
 *   unknown requests, another device's, or ones never handed over (cancelled) are ignored.
 * - Mode `off` refuses every open request of the device on the host and hands nothing over: Conduit
 *   would refuse them all anyway, and Hermes learns it at once.
 * - A waiting request whose key is no longer shared, or whose value is no longer a choice, is refused
 *   (Conduit checks again itself; a request it already picked up is left for it to report).
 */
export function withUpload(
  file: SettingsFile,
  upload: PutConduitSettingsRequest,
  nowS: number,
): { file: SettingsFile; result: ({ ok: true } & UploadResult) | ({ ok: false } & UploadRefusal) } {
  const now = Math.floor(nowS);
  const installation = upload.installation_id;
  const known = file.devices.some((device) => device.installation_id === installation);
  if (!known && file.devices.length >= CONDUIT_SETTINGS_LIMITS.devicesPerProfile) {
    return {
      file,
      result: {
        ok: false,
        reason: 'device_limit',
        message: `This profile already has ${CONDUIT_SETTINGS_LIMITS.devicesPerProfile} devices sharing settings with Hermes; a device is forgotten 30 days after its last upload`,
      },
    };
  }

  const outcomes = new Map(upload.outcomes.map((report) => [report.id, report]));
  let recorded = 0;
  let refused = 0;
  const shared = upload.settings.filter((setting) => !isHermesSetting(setting.key));
  const ignoredKeys = upload.settings.filter((setting) => isHermesSetting(setting.key)).map((setting) => setting.key);
  const byKey = new Map(shared.map((setting) => [setting.key, setting]));

  const requests = file.requests.map((request) => {
    if (request.installation_id !== installation) return request;
    const report = outcomes.get(request.id);
    const handedOver = request.picked_up_at !== null && request.state !== 'cancelled';
    // The same outcome again (an upload retried) is not news, so get still shows it once.
    if (report && handedOver && request.state !== report.outcome) {
      recorded++;
      return finished(request, report.outcome, now, { note: report.note, outcomeValue: report.value });
    }
    if (!isOpen(request.state)) return request;
    if (upload.mode === 'off') {
      refused++;
      return finished(request, 'refused', now, {
        note: `The user has turned "Let Hermes change settings" off on ${upload.device || 'this device'}.`,
      });
    }
    if (request.state === 'waiting') {
      const setting = byKey.get(request.key);
      if (!setting) {
        refused++;
        return finished(request, 'refused', now, { note: `${request.key} is no longer shared with Hermes.` });
      }
      if (!setting.choices.some((choice) => choice.value === request.value)) {
        refused++;
        return finished(request, 'refused', now, {
          note: `${JSON.stringify(request.value)} is no longer one of the choices of ${request.key}.`,
        });
      }
    }
    return request;
  });

  // Handed over: every open request of the device, oldest first, marked picked up the first time.
  const handed = requests.map((request) =>
    request.installation_id === installation && isOpen(request.state)
      ? { ...request, state: 'picked_up' as const, picked_up_at: request.picked_up_at ?? now }
      : request,
  );
  const device: SettingsDevice = {
    installation_id: installation,
    device: upload.device,
    app_version: upload.app_version,
    mode: upload.mode,
    settings: shared,
    synced_at: now,
  };
  const others = file.devices.filter((candidate) => candidate.installation_id !== installation);
  const next: SettingsFile = { ...file, devices: [device, ...others], requests: handed };
  return {
    file: next,
    result: {
      ok: true,
      requests: handed
        .filter((request) => request.installation_id === installation && isOpen(request.state))
        .sort((a, b) => a.requested_at - b.requested_at)
        .map(forDevice),
      ignoredKeys,
      recorded,
      refused,
    },
  };
}

/** One change Hermes asks for, already checked against the device's list. */
export interface ChangeInput {
  key: string;
  value: ConduitSettingValue;
  seenValue: ConduitSettingValue;
  reason: string;
}

export interface ChangeOrigin {
  installationId: string;
  sessionId: string;
  turnId: string | null;
}

export type ChangeRefusal = { reason: 'hourly_limit' | 'turn_limit'; message: string };

/** Requests of the device made within the last hour (cancelled and finished ones count too). */
export function requestsInLastHour(file: SettingsFile, installationId: string, nowS: number): number {
  return file.requests.filter(
    (request) => request.installation_id === installationId && request.requested_at > Math.floor(nowS) - 3600,
  ).length;
}

/**
 * Keeps the requests, or says which bound refuses them: all of them or none, so a batch is never half
 * asked. A waiting request for the same key of the same device is replaced (cancelled, and not shown
 * to Hermes as news), so the device never gets two answers to one question. Pure.
 */
export function withChanges(
  file: SettingsFile,
  changes: readonly ChangeInput[],
  origin: ChangeOrigin,
  ids: readonly string[],
  nowS: number,
): {
  file: SettingsFile;
  result: { ok: true; created: StoredRequest[]; replaced: string[] } | ({ ok: false } & ChangeRefusal);
} {
  const now = Math.floor(nowS);
  const limits = CONDUIT_SETTINGS_LIMITS;
  if (origin.turnId !== null) {
    const thisTurn = file.requests.filter((request) => request.turn_id === origin.turnId).length;
    if (thisTurn + changes.length > limits.requestsPerCall) {
      return {
        file,
        result: {
          ok: false,
          reason: 'turn_limit',
          message: `At most ${limits.requestsPerCall} changes may be asked for in one turn; this turn has asked for ${thisTurn} already.`,
        },
      };
    }
  }
  const lastHour = requestsInLastHour(file, origin.installationId, now);
  if (lastHour + changes.length > limits.requestsPerDeviceHour) {
    return {
      file,
      result: {
        ok: false,
        reason: 'hourly_limit',
        message: `At most ${limits.requestsPerDeviceHour} changes an hour may be asked of one device; ${lastHour} were asked in the last hour, so ${Math.max(0, limits.requestsPerDeviceHour - lastHour)} more fit now. Try again later.`,
      },
    };
  }
  const keys = new Set(changes.map((change) => change.key));
  const replaced: string[] = [];
  const kept = file.requests.map((request) => {
    if (request.installation_id !== origin.installationId || request.state !== 'waiting' || !keys.has(request.key))
      return request;
    replaced.push(request.id);
    return finished(request, 'cancelled', now, {
      note: 'Replaced by a newer request for the same setting.',
      seen: true,
    });
  });
  const created = changes.map((change, index): StoredRequest => ({
    id: ids[index] ?? newRequestId(),
    installation_id: origin.installationId,
    key: change.key,
    value: change.value,
    seen_value: change.seenValue,
    reason: change.reason,
    session_id: origin.sessionId,
    turn_id: origin.turnId,
    requested_at: now,
    expires_at: now + limits.requestTtlS,
    state: 'waiting',
    picked_up_at: null,
    finished_at: null,
    outcome_value: null,
    note: null,
    seen: false,
  }));
  return { file: { ...file, requests: [...kept, ...created] }, result: { ok: true, created, replaced } };
}

export type CancelResult =
  | { ok: true; request: StoredRequest }
  | { ok: false; reason: 'unknown' | 'picked_up' | 'finished'; request: StoredRequest | null };

/** Takes back a request Conduit has not picked up. Pure. */
export function withCancelled(
  file: SettingsFile,
  id: string,
  nowS: number,
): { file: SettingsFile; result: CancelResult } {
  const request = file.requests.find((candidate) => candidate.id === id);
  if (!request) return { file, result: { ok: false, reason: 'unknown', request: null } };
  if (request.state === 'picked_up') return { file, result: { ok: false, reason: 'picked_up', request } };
  if (request.state !== 'waiting') return { file, result: { ok: false, reason: 'finished', request } };
  const cancelled = finished(request, 'cancelled', nowS, { note: 'Cancelled by Hermes.', seen: true });
  return {
    file: { ...file, requests: file.requests.map((candidate) => (candidate.id === id ? cancelled : candidate)) },
    result: { ok: true, request: cancelled },
  };
}

/** Marks finished requests Hermes has now been told about. */
export function withSeen(file: SettingsFile, ids: readonly string[]): SettingsFile {
  const told = new Set(ids);
  if (!file.requests.some((request) => told.has(request.id) && !isOpen(request.state) && !request.seen)) return file;
  return {
    ...file,
    requests: file.requests.map((request) =>
      told.has(request.id) && !isOpen(request.state) ? { ...request, seen: true } : request,
    ),
  };
}

/** Whether any Conduit has uploaded its settings to this profile (the tool is offered then). */
export function anyDeviceSynced(file: SettingsFile): boolean {
  return file.devices.length > 0;
}

/** One profile's conduit-settings.json, read and changed as LockedJsonStore says. */
export class SettingsStore extends LockedJsonStore<SettingsFile> {
  constructor(home: string) {
    super(home, SETTINGS_FILE, settingsFileShape, emptyFile, settle);
  }
}
