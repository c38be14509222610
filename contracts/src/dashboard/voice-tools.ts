import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { PHONE_DEVICE_ID_PATTERN, sealedVoiceCall } from './phone-data.js';
import { profileQuery } from './profile.js';

/**
 * Voice reads (the seed's "Gemini Live, Grok Live and GPT-Live … can't call Hermes' tools"): a voice
 * mode runs at its provider, driven by Conduit, so Conduit offers the voice model the phone-data tools
 * this phone shares and runs each call here, sealed both ways with the device's own key for that
 * feature (phone-data.ts: the `voice device-to-host` / `voice host-to-device` directions, associated
 * data binding tool, kid, device and call id). Dashboard access alone opens nothing: the host answers
 * only the device whose key sealed the call, and only with that device's data.
 *
 * The wire of these two routes is ours (the seed names the family, not its fields); the call's envelope
 * is the phone-data wire's `sealedVoiceCall` in both directions.
 */

/** Which phone-data key seals a tool's calls; calendar, phone status and contacts share the phone key. */
export const voiceToolKey = z.enum(['health', 'location', 'phone']);

/** The seed's bounds of the voice reads. */
export const VOICE_TOOL_LIMITS = {
  /** Calls answered (and refused) per profile a minute, every tool together. */
  readsPerMinute: 60,
  /** The sealed call's body: a few ids and a small sealed `{call_id, tool, args, provider}`. */
  callBodyMaxBytes: 64 * 1024,
} as const;

export const voiceToolsQuery = profileQuery.extend({
  /** The asking phone: only tools whose data this device shares, under a current key, are listed. */
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN).optional(),
});

/** One tool a voice mode may offer its model, as Hermes describes it, minus what a voice read never takes. */
export const voiceToolDescription = z.object({
  /** The Hermes tool's name (`conduit_health`); the sealed call names it in its associated data. */
  name: z.string(),
  key: voiceToolKey,
  /** Hermes' own description of the tool. */
  description: z.string(),
  /**
   * Hermes' JSON-schema parameters of the tool (draft-07, as MCP lists them) without `device` and
   * `_conduit_context`: a voice read covers only the asking phone, and no hook signs it.
   */
  parameters: z.record(z.string(), z.unknown()),
});

export const voiceToolsResponse = z.object({
  ok: z.literal(true),
  /** The device asked about, or null when none was named (then nothing is offered). */
  device_id: z.string().nullable(),
  tools: z.array(voiceToolDescription),
});

const common = {
  401: unauthorized,
  500: detailAnswer('An unexpected failure, named by its type only.'),
  503: detailUnavailable('The profile cannot be resolved.'),
};

const base = '/api/plugins/conduit_push/voice-tools';
const tags = ['voice-tools'];

export const getVoiceTools = defineRoute({
  method: 'GET',
  path: base,
  operationId: 'getVoiceTools',
  summary: 'The phone-data tools a voice mode may offer for this device',
  description:
    'Each tool whose data this device shares with the profile under a current key, with Hermes’ description and ' +
    'parameters (minus `device`: a voice read covers only the asking phone). Whether a voice mode may read it is the ' +
    'user’s switch in Conduit; the host’s boundary is the seal of each call.',
  tags,
  auth: 'bearer',
  query: voiceToolsQuery,
  responses: {
    200: noStoreAnswer('The tools, in a stable order; empty without a device_id.', voiceToolsResponse),
    400: detailAnswer('device_id is refused by its pattern.'),
    ...common,
  },
});

export const postVoiceToolCall = defineRoute({
  method: 'POST',
  path: `${base}/call`,
  operationId: 'postVoiceToolCall',
  summary: 'Run one sealed voice read for the asking device',
  description:
    'The body is a `sealedVoiceCall` the phone sealed with the tool’s feature key (`voice device-to-host`); the answer ' +
    'is the same envelope sealed for that device alone (`voice host-to-device`) around `{call_id, result}`, where ' +
    'result is what the Hermes tool answers (`{"ok": false, "error"}` included). Read actions only; each read is ' +
    'logged in the feature’s reads log under the voice mode’s name.',
  tags,
  auth: 'bearer',
  query: profileQuery,
  body: sealedVoiceCall,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The sealed answer.', sealedVoiceCall),
    ...detailBodyRefusals,
    400: detailAnswer(
      'The envelope is refused (its field), the call does not open with this device key (tampered, another tool or ' +
        'call id), what is inside the seal is invalid, or the arguments ask for an action a voice read does not offer.',
    ),
    404: detailAnswer('No voice tool of this name is served here.'),
    412: detailAnswer(
      'The device id or kid has no key for this tool’s feature here (never agreed, wiped or replaced).',
    ),
    429: detailAnswer('More than 60 voice reads a minute for this profile.'),
    ...common,
  },
});
