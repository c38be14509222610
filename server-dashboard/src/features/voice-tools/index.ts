import { sealedVoiceCall } from '@conduit/contracts/dashboard/phone-data';
import { getVoiceTools, postVoiceToolCall, VOICE_TOOL_LIMITS } from '@conduit/contracts/dashboard/voice-tools';
import { bindRoute } from '@conduit/contracts/server';
import type { z } from 'zod';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { perMinute } from '../../kernel/rate-window.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { openVoiceCall, sealVoiceAnswer, type OpenedVoiceCall } from '../../kernel/phone-data/voice-reads.js';
import { voiceModeName, type VoiceToolProvider } from '../../kernel/phone-data/voice-tool-provider.js';

/** Why a call did not open, as the route answers it. */
const REFUSALS: Record<'invalid' | 'unknown_key' | 'does_not_open', [status: number, detail: string]> = {
  invalid: [400, 'The voice call is invalid'],
  unknown_key: [412, 'This device has no key for this tool here; set up a new key'],
  does_not_open: [400, 'The voice call does not open with this device key'],
};

/** The sealed envelope as a clean value, or 400 naming its first refused field. */
function validCall(raw: unknown): z.output<typeof sealedVoiceCall> {
  const parsed = sealedVoiceCall.safeParse(readJsonBody(raw));
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  throw new DetailError(400, typeof field === 'string' ? `${field} is missing or invalid` : 'Request body is invalid');
}

/** The providers by tool name; two that share a name are a wiring bug, refused at start. */
function namedOnce(providers: readonly VoiceToolProvider[]): Map<string, VoiceToolProvider> {
  const byName = new Map(providers.map((provider) => [provider.name, provider]));
  if (byName.size !== providers.length) throw new Error('Two voice tools share a name');
  return byName;
}

/**
 * Voice reads (`voice-tools`): `GET /voice-tools` lists the tools a voice mode may offer for one
 * device, `POST /voice-tools/call` runs one sealed call for the device that sealed it. Every
 * provider's tool goes through the same seal, key check and rate limit here. The providers are those the
 * registered features declare (`HostFeature.voiceTools`, handed over as `FeatureKernel.voiceTools`), in
 * their order; `only` serves a given list instead (a test's).
 */
export function voiceToolsFeature(only?: readonly VoiceToolProvider[]): HostFeature {
  if (only) namedOnce(only);
  return {
    name: 'voice-tools',
    // The listing: it answers 200 (an empty list without a device) and changes nothing.
    capabilities: [{ name: 'voice-tools', method: 'GET', path: getVoiceTools.path }],
    register(scope, kernel) {
      const providers = only ?? kernel.voiceTools;
      const byName = namedOnce(providers);
      const reads = perMinute(VOICE_TOOL_LIMITS.readsPerMinute, kernel.clock);
      const nowS = () => Math.floor(kernel.clock.now() / 1000);
      answerWithDetail(scope, {
        bodyLimitBytes: VOICE_TOOL_LIMITS.callBodyMaxBytes,
        failure: (request, type) => `Voice ${request.method === 'GET' ? 'tools' : 'read'} failed on the host (${type})`,
      });

      /** Runs `work` on the provider's store (null when the profile has none), closing it after. */
      function withStore<T>(home: string, provider: VoiceToolProvider, work: (store: PhoneDataStore | null) => T): T {
        const store = PhoneDataStore.open(home, provider.shape, false);
        try {
          return work(store);
        } finally {
          store?.close();
        }
      }

      bindRoute(scope, getVoiceTools, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const deviceId = query.device_id ?? null;
        const tools = [];
        if (deviceId !== null) {
          for (const provider of providers) {
            const keyed = withStore(profile.home, provider, (store) => store?.device(deviceId) !== undefined);
            if (!keyed || !(await provider.available(profile.home, deviceId))) continue;
            tools.push({ name: provider.name, key: provider.key, ...provider.describe() });
          }
        }
        return {
          status: 200,
          body: { ok: true as const, device_id: deviceId, tools },
          headers: { 'Cache-Control': 'no-store' },
        };
      });

      bindRoute(scope, postVoiceToolCall, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        // Counted before anything is opened, refused calls included: a flood of bad seals costs as
        // much as good reads, and made-up profile names were refused (503) before they could mint windows.
        if (!reads.tryTake(profile.name)) throw new DetailError(429, 'Too many voice reads; try again shortly');
        const envelope = validCall(raw);
        // Chosen by the name in the clear, which the associated data binds: a call re-labelled with
        // another tool does not open under it.
        const provider = byName.get(envelope.tool);
        if (!provider) throw new DetailError(404, `${envelope.tool} is not a voice tool of this host`);
        const opened = withStore(profile.home, provider, (store): OpenedVoiceCall => {
          const outcome = store ? openVoiceCall(store, provider.label, envelope, nowS()) : 'unknown_key';
          if (typeof outcome === 'string') throw new DetailError(...REFUSALS[outcome]);
          return outcome;
        });
        // A call sent again (the phone retrying after a lost answer) is answered again: the answer opens
        // only on that phone, so a replay by anyone else learns nothing, and a retry must work.
        const via = voiceModeName(opened.provider);
        const outcome = await provider.read(profile.home, opened.deviceId, opened.args, {
          provider: opened.provider,
          via,
          callId: opened.callId,
          nowS: nowS(),
        });
        if ('refused' in outcome) throw new DetailError(400, outcome.refused);
        // Which tool and mode read, never what: the result is the user's data.
        kernel.log.info('voice read', { profile: profile.name, tool: provider.name, via });
        return {
          status: 200,
          body: sealVoiceAnswer(provider.label, opened, outcome.result),
          headers: { 'Cache-Control': 'no-store' },
        };
      });
    },
  };
}
