import { putConduitSettings, putConduitSettingsRequest } from '@conduit/contracts/dashboard/conduit-settings';
import { bindRoute } from '@conduit/contracts/server';
import { LockTimeoutError } from '../../credentials/file-lock.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { CorruptStateError } from '../../state/json-state-file.js';
import { SettingsStore, withUpload } from './settings-store.js';
import { settingsTool } from './settings-tool.js';

export { hermesSettingRefusal, isHermesSetting } from './hermes-settings.js';
export { deviceHandle, SETTINGS_FILE, SETTINGS_STORE_LIMITS, type SettingsFile } from './settings-store.js';
export { SETTINGS_TOOL, SETTINGS_TOOL_DESCRIPTION } from './settings-tool.js';

/** The bounds of the upload route. */
const BOUNDS = {
  /**
   * Conduit uploads on connect, on foreground, on a shared setting's change and after a turn that used
   * the tool: a few a minute at most. 60 a minute per profile lets every device of a household sync at
   * once and still stops a retry loop.
   */
  uploadsPerMinute: 60,
  /**
   * 64 settings of 24 choices at their longest are about 370 KB of JSON in plain ASCII, and 200
   * outcomes with notes about 105 KB more; 512 KiB holds the largest valid upload of ordinary text
   * (titles in scripts of several bytes a character use less of their bounds in practice).
   */
  bodyLimitBytes: 512 * 1024,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * Settings requests (`conduit-settings`): each Conduit shares settings and its "Let Hermes change
 * settings" mode with PUT /conduit-settings and takes back the changes Hermes asked for with
 * conduit_settings; they wait in the profile's conduit-settings.json (the seed, conduit_settings).
 */
export function conduitSettingsFeature(): HostFeature {
  return {
    name: 'conduit-settings',
    capabilities: [{ name: 'conduit-settings', method: 'PUT', path: putConduitSettings.path }],
    tools: [settingsTool()],
    register(scope, kernel) {
      const uploads = perMinute(BOUNDS.uploadsPerMinute, kernel.clock);
      answerWithDetail(scope, {
        bodyLimitBytes: BOUNDS.bodyLimitBytes,
        known(error) {
          if (error instanceof CorruptStateError) return new DetailError(503, error.message);
          if (error instanceof LockTimeoutError)
            return new DetailError(503, 'Conduit settings are busy; try again shortly');
          return undefined;
        },
        failure: (_request, type) => `Conduit settings upload failed on the host (${type})`,
      });

      bindRoute(scope, putConduitSettings, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        // Validated before the limit is taken, so a malformed retry loop does not lock the phone out.
        const parsed = putConduitSettingsRequest.safeParse(readJsonBody(raw));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new DetailError(
            400,
            `Invalid settings upload: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'not valid'}`,
          );
        }
        if (!uploads.tryTake(limiterKey(query.profile))) {
          throw new DetailError(
            429,
            `Too many settings uploads for this profile (at most ${BOUNDS.uploadsPerMinute} a minute); try again shortly`,
          );
        }
        const nowS = kernel.clock.now() / 1000;
        const result = await new SettingsStore(profile.home).update(nowS, (file) =>
          withUpload(file, parsed.data, nowS),
        );
        if (!result.ok) throw new DetailError(409, result.message);
        kernel.log.info('conduit settings upload', {
          profile: profile.name,
          mode: parsed.data.mode,
          shared: parsed.data.settings.length - result.ignoredKeys.length,
          outcomes: result.recorded,
          refused: result.refused,
          handed: result.requests.length,
        });
        return {
          status: 200,
          body: { ok: true as const, requests: result.requests, ignored_keys: result.ignoredKeys },
          headers: NO_STORE,
        };
      });
    },
  };
}
