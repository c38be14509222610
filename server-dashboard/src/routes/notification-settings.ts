import type { FastifyInstance } from 'fastify';
import {
  getCronNotifications,
  getReplySources,
  putCronNotifications,
  putReplySources,
} from '@conduit/contracts/dashboard/notification-settings';
import { WireError, bindRoute } from '@conduit/contracts/server';
import { resolveProfile } from '../fronting/profiles.js';
import type { ProfileSettings } from '../settings/profile-settings.js';
import { CorruptStateError } from '../state/json-state-file.js';

/** A corrupt settings file answers 503 and is left as it is, for the user to fix. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CorruptStateError) {
      throw new WireError(503, 'state_file_corrupt', { detail: error.message });
    }
    throw error;
  }
}

/** Cron notification muting and per-source "response ready" choices (capabilities cron-notifications, reply-sources). */
export function notificationSettingsRoutes(app: FastifyInstance, hermesHome: string, settings: ProfileSettings): void {
  bindRoute(app, getCronNotifications, async ({ query }) => {
    const profile = resolveProfile(hermesHome, query.profile);
    const muted = await guarded(() => settings.cron(profile).muted());
    return { status: 200, body: { ok: true, muted }, headers: { 'cache-control': 'no-store' } };
  });
  bindRoute(app, putCronNotifications, async ({ query, body }) => {
    const profile = resolveProfile(hermesHome, query.profile);
    const { job_id: jobId, notify } = body;
    const muted = await guarded(() => settings.cron(profile).setNotify(jobId, notify));
    return { status: 200, body: { ok: true, muted }, headers: { 'cache-control': 'no-store' } };
  });
  bindRoute(app, getReplySources, async ({ query }) => {
    const profile = resolveProfile(hermesHome, query.profile);
    const sources = await guarded(() => settings.replySources(profile).choices());
    return { status: 200, body: { ok: true, sources }, headers: { 'cache-control': 'no-store' } };
  });
  bindRoute(app, putReplySources, async ({ query, body }) => {
    const profile = resolveProfile(hermesHome, query.profile);
    const { source, notify } = body;
    const sources = await guarded(() => settings.replySources(profile).set(source, notify));
    return { status: 200, body: { ok: true, sources }, headers: { 'cache-control': 'no-store' } };
  });
}
