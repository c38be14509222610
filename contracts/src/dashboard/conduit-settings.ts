import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Settings requests (`conduit_settings`, the seed): each Conduit uploads the settings it lets Hermes
 * see and the user's "Let Hermes change settings" mode with PUT /conduit-settings, and takes back the
 * changes Hermes asked for; Hermes only asks (get / change / cancel), Conduit applies or asks the user,
 * and reports each outcome on its next upload. The bounds the host enforces live here.
 */
export const CONDUIT_SETTINGS_LIMITS = {
  /** The seed: 20 requested changes per device per hour, so a looping model cannot nag the user. */
  requestsPerDeviceHour: 20,
  /**
   * The seed: 10 per call. One conduit_settings call asks for at most 10 changes, and so does one
   * Hermes turn in all its calls together (the turn the pre_tool_call hook signed), so splitting a
   * batch over several calls of one turn does not get past it.
   */
  requestsPerCall: 10,
  /** The seed: 8 devices per profile (a household's phones and iPads). */
  devicesPerProfile: 8,
  /** The seed: a request waits a day; a change asked for yesterday is about a moment that has passed. */
  requestTtlS: 24 * 3600,
  /** Settings one Conduit shares; its Settings screen has a few dozen, 64 leaves room for growth. */
  settingsPerDevice: 64,
  /** Dotted names such as `live.call_style`. */
  keyMaxChars: 64,
  /** A setting's plain-language title, as the Settings screen shows it. */
  titleMaxChars: 80,
  /** What the setting means, in plain language, for the model to match the user's words to it. */
  meaningMaxChars: 500,
  /** A setting is a choice between listed values (a picker or a switch); 24 fills any picker. */
  choicesPerSetting: 24,
  /** A value that is text: a voice or style name, not free text. */
  valueMaxChars: 100,
  choiceTitleMaxChars: 80,
  /** Why Hermes asks, shown to the user beside Apply. */
  reasonMaxChars: 300,
  /** Outcomes one upload reports; 20 an hour for 8 devices over a day stays far below. */
  outcomesPerUpload: 200,
  /** Conduit's own words about an outcome ("you changed it to Calm after Hermes read it"). */
  outcomeNoteMaxChars: 300,
} as const;

/**
 * The user's "Let Hermes change settings" mode, as Conduit uploads it:
 * - `ask` (the default, "Ask me every time"): every change waits for the user's Apply;
 * - `small_without_asking` ("Small changes without asking"): the small tier (how calls sound, voices)
 *   applies at once with an Undo, the rest still asks;
 * - `off`: Conduit refuses everything, so the host hands nothing over.
 */
export const CONDUIT_SETTINGS_MODES = ['ask', 'small_without_asking', 'off'] as const;
export type ConduitSettingsMode = (typeof CONDUIT_SETTINGS_MODES)[number];

/** How big a change is, Conduit's call: `small` may apply without asking under small_without_asking. */
export const CONDUIT_SETTING_TIERS = ['small', 'other'] as const;
export type ConduitSettingTier = (typeof CONDUIT_SETTING_TIERS)[number];

/** What Conduit reports it did with a request. */
export const CONDUIT_SETTINGS_OUTCOMES = ['applied', 'dismissed', 'conflict', 'refused', 'undone'] as const;
export type ConduitSettingsOutcome = (typeof CONDUIT_SETTINGS_OUTCOMES)[number];

/** A setting's value: one of its choices, a JSON string, number or boolean. */
export const conduitSettingValue = z.union(
  [
    z.string().max(CONDUIT_SETTINGS_LIMITS.valueMaxChars, {
      error: `must be at most ${CONDUIT_SETTINGS_LIMITS.valueMaxChars} characters`,
    }),
    z.number().refine(Number.isFinite, { error: 'must be a finite number' }),
    z.boolean(),
  ],
  { error: 'must be a string, a number or a boolean' },
);
export type ConduitSettingValue = z.infer<typeof conduitSettingValue>;

/** A setting key: letters, digits, `_`, `-` and `.`, starting with a letter or a digit. */
export const CONDUIT_SETTING_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

const text = (max: number, name: string) =>
  z
    .string({ error: `${name} must be text` })
    .min(1, { error: `${name} must not be empty` })
    .max(max, { error: `${name} must be at most ${max} characters` });

export const conduitSettingChoice = z.object({
  value: conduitSettingValue,
  /** How the Settings screen names this choice; the value itself when absent. */
  title: text(CONDUIT_SETTINGS_LIMITS.choiceTitleMaxChars, 'title').optional(),
});

/** One setting a Conduit shares with Hermes. */
export const conduitSharedSetting = z
  .object({
    key: text(CONDUIT_SETTINGS_LIMITS.keyMaxChars, 'key').regex(CONDUIT_SETTING_KEY_PATTERN, {
      error: 'key may hold only letters, digits, _, - and . (starting with a letter or a digit)',
    }),
    title: text(CONDUIT_SETTINGS_LIMITS.titleMaxChars, 'title'),
    meaning: text(CONDUIT_SETTINGS_LIMITS.meaningMaxChars, 'meaning'),
    choices: z
      .array(conduitSettingChoice, { error: 'choices must be a list' })
      .min(1, { error: 'choices must list at least one value' })
      .max(CONDUIT_SETTINGS_LIMITS.choicesPerSetting, {
        error: `choices must list at most ${CONDUIT_SETTINGS_LIMITS.choicesPerSetting} values`,
      }),
    /** The value in force on this device now. */
    value: conduitSettingValue,
    tier: z.enum(CONDUIT_SETTING_TIERS, { error: 'tier must be small or other' }),
  })
  .superRefine((setting, context) => {
    const values = setting.choices.map((choice) => choice.value);
    if (new Set(values).size !== values.length) {
      context.addIssue({ code: 'custom', path: ['choices'], message: 'choices must not repeat a value' });
    }
    if (!values.includes(setting.value)) {
      context.addIssue({ code: 'custom', path: ['value'], message: 'value must be one of the choices' });
    }
  });
export type ConduitSharedSetting = z.infer<typeof conduitSharedSetting>;

/** What Conduit did with one request it picked up. */
export const conduitSettingsOutcomeReport = z.object({
  /** The request's id, as the PUT answer handed it over. */
  id: text(64, 'id'),
  outcome: z.enum(CONDUIT_SETTINGS_OUTCOMES, {
    error: 'outcome must be applied, dismissed, conflict, refused or undone',
  }),
  /** The value in force after it (the user's own value on `conflict`). */
  value: conduitSettingValue.optional(),
  /** Conduit's words about it, for Hermes. */
  note: text(CONDUIT_SETTINGS_LIMITS.outcomeNoteMaxChars, 'note').optional(),
});
export type ConduitSettingsOutcomeReport = z.infer<typeof conduitSettingsOutcomeReport>;

export const putConduitSettingsRequest = z
  .object({
    installation_id: text(128, 'installation_id'),
    /** The device's name as the user sees it ("Anna's iPhone"). */
    device: z.string({ error: 'device must be text' }).max(128, { error: 'device must be at most 128 characters' }),
    app_version: z
      .string({ error: 'app_version must be text' })
      .max(40, { error: 'app_version must be at most 40 characters' }),
    mode: z.enum(CONDUIT_SETTINGS_MODES, { error: 'mode must be ask, small_without_asking or off' }),
    /** Every setting this device shares now; one it leaves out is out of Hermes' reach. */
    settings: z
      .array(conduitSharedSetting, { error: 'settings must be a list' })
      .max(CONDUIT_SETTINGS_LIMITS.settingsPerDevice, {
        error: `settings must list at most ${CONDUIT_SETTINGS_LIMITS.settingsPerDevice} settings`,
      }),
    /** Outcomes of requests this device handled since its last upload. */
    outcomes: z
      .array(conduitSettingsOutcomeReport, { error: 'outcomes must be a list' })
      .max(CONDUIT_SETTINGS_LIMITS.outcomesPerUpload, {
        error: `outcomes must list at most ${CONDUIT_SETTINGS_LIMITS.outcomesPerUpload} outcomes`,
      })
      .default([]),
  })
  .superRefine((request, context) => {
    const seen = new Set<string>();
    request.settings.forEach((setting, index) => {
      if (seen.has(setting.key)) {
        context.addIssue({ code: 'custom', path: ['settings', index, 'key'], message: 'key is listed twice' });
      }
      seen.add(setting.key);
    });
  });
export type PutConduitSettingsRequest = z.infer<typeof putConduitSettingsRequest>;

/** A change Hermes asked for, as the device picks it up. Times are Unix seconds. */
export const conduitSettingsRequest = z.object({
  id: z.string(),
  key: z.string(),
  /** The value Hermes asks for (one of the setting's choices when it asked). */
  value: conduitSettingValue,
  /** The value Hermes saw when it asked: a device whose value differs now keeps the user's (`conflict`). */
  seen_value: conduitSettingValue,
  /** Why, in Hermes' words, for the user. */
  reason: z.string(),
  /** The chat that asked. */
  session_id: z.string(),
  requested_at: z.number(),
  expires_at: z.number(),
});
export type ConduitSettingsRequest = z.infer<typeof conduitSettingsRequest>;

export const putConduitSettingsResponse = z.object({
  ok: z.literal(true),
  /**
   * The requests for this device with no outcome yet, oldest first; handed over again on each upload
   * until Conduit reports an outcome or they expire (so a lost answer loses nothing). Empty while the
   * mode is `off`.
   */
  requests: z.array(conduitSettingsRequest),
  /** Shared keys the host leaves out: Hermes' own settings (speech providers, keys, voice.gpt_live, models). */
  ignored_keys: z.array(z.string()),
});

/**
 * Uploads what this Conduit shares (settings and mode) and the outcomes of requests it handled, and
 * takes back the requests waiting for it. Conduit calls it when it connects, comes to the foreground,
 * changes a shared setting, or a turn used conduit_settings.
 */
export const putConduitSettings = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/conduit-settings',
  operationId: 'putConduitSettings',
  summary: 'Share settings with Hermes, report outcomes and fetch requested changes',
  tags: ['conduit-settings'],
  auth: 'bearer',
  query: profileQuery,
  body: putConduitSettingsRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The requests waiting for this device.', putConduitSettingsResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    409: detailAnswer(
      'This profile already has 8 devices sharing settings (a device is forgotten 30 days after its last upload).',
    ),
    429: detailAnswer('More than 60 uploads a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable(
      'The profile cannot be resolved, or its conduit-settings.json cannot be read (left unchanged).',
    ),
  },
});
