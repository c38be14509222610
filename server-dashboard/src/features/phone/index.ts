import { PHONE_LABEL, PHONE_LIMITS, phoneRoutes, postPhoneExchange } from '@conduit/contracts/dashboard/phone';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import type { SharedData } from '../../kernel/phone-data/conduit-first.js';
import { sealedIngest } from '../../kernel/phone-data/index.js';
import { PHONE_VOICE_TOOLS } from './phone-voice-tools.js';
import { registerPhoneExchange } from './phone-exchange.js';
import { relayPhoneNudge, type PhoneNudge } from './phone-nudge.js';
import { PHONE_DEVICE_TABLES, PHONE_SCHEMA, parsePhoneBatch, storePhoneBatch, summarizePhone } from './phone-store.js';
import {
  alarmsShared,
  calendarShared,
  calendarTool,
  contactsShared,
  contactsTool,
  phoneStatusShared,
  phoneTool,
} from './phone-tools.js';

export { PHONE_SHAPE } from './phone-store.js';
export {
  phoneShares,
  readCalendar,
  readContacts,
  readPhone,
  sharesAlarms,
  sharesCalendar,
  sharesContacts,
  sharesPhone,
  sharesStatus,
  type PhoneReadContext,
  type PhoneReadResult,
} from './phone-reads.js';
export {
  alarmsShared,
  CALENDAR_TOOL,
  CALENDAR_TOOL_DESCRIPTION,
  CALENDAR_VOICE_DESCRIPTION,
  calendarShared,
  calendarToolInput,
  CONTACTS_TOOL,
  CONTACTS_TOOL_DESCRIPTION,
  contactsShared,
  contactsToolInput,
  PHONE_TOOL,
  PHONE_TOOL_DESCRIPTION,
  PHONE_VOICE_DESCRIPTION,
  phoneStatusShared,
  phoneToolInput,
} from './phone-tools.js';
export {
  nudgeModeOf,
  phoneChangeEvent,
  phoneChangeEventId,
  relayPhoneNudge,
  type PhoneNudge,
  type PhoneNudgeMode,
  type PhoneNudgeOutcome,
} from './phone-nudge.js';
export { calendarVoiceTool, contactsVoiceTool, PHONE_VOICE_TOOLS, phoneVoiceTool } from './phone-voice-tools.js';
export { exchangeAad, EXCHANGE_BODY_LIMIT_BYTES } from './phone-exchange.js';
export { usingCalendarSkill } from './using-calendar-skill.js';

/** What a phone shares with a profile here, each with the Conduit tool that reads it ("Conduit first"). */
const PHONE_SHARED_DATA: readonly SharedData[] = [
  { what: 'calendars and reminders', tool: 'conduit_calendar', shared: calendarShared },
  // conduit_phone reads status and Focus, and alarms and timers: one entry for whichever are on, so
  // the line names the tool once.
  {
    what: 'phone status and Focus',
    tool: 'conduit_phone',
    shared: (home) => phoneStatusShared(home) && !alarmsShared(home),
  },
  {
    what: 'phone status, Focus, alarms and timers',
    tool: 'conduit_phone',
    shared: (home) => phoneStatusShared(home) && alarmsShared(home),
  },
  {
    what: 'alarms and timers',
    tool: 'conduit_phone',
    shared: (home) => alarmsShared(home) && !phoneStatusShared(home),
  },
  { what: 'contacts', tool: 'conduit_contacts', shared: contactsShared },
];

export interface PhoneFeatureDeps {
  /**
   * How a new pending change wakes the phone; by default relayPhoneNudge over the app's relay gateway
   * (FeatureKernel.relayGateway).
   */
  nudge?: PhoneNudge;
}

/**
 * Calendar and phone status (`phone`): the calendars, reminders, Focus, status snapshot, alarms and
 * contacts a phone shares with the profile, sealed end to end on the phone-data core under its own key
 * and kept in the profile's conduit-phone.sqlite3, held to the sharing state each batch declares (the
 * seed, Calendar and phone status); and the pending changes Hermes proposes, which the phone takes and
 * settles with the sealed POST /phone/exchange (that route also answers the phone's voice reads).
 */
export function createPhoneFeature(deps: PhoneFeatureDeps = {}): HostFeature {
  const ingest = sealedIngest({
    feature: 'phone',
    title: 'Phone',
    label: PHONE_LABEL,
    routes: phoneRoutes,
    limits: {
      devicesPerProfile: PHONE_LIMITS.devicesPerProfile,
      // The seed's 4 MiB per batch: a year of a busy calendar either way with notes and attendees.
      sealedBatchMaxBytes: PHONE_LIMITS.sealedBatchMaxBytes,
      uploadsPerMinute: PHONE_LIMITS.uploadsPerMinute,
    },
    store: { schema: PHONE_SCHEMA, deviceTables: PHONE_DEVICE_TABLES },
    parseBatch: parsePhoneBatch,
    storeBatch: storePhoneBatch,
    summarize: summarizePhone,
  });
  const nudgeFor = (kernel: FeatureKernel): PhoneNudge =>
    deps.nudge ??
    relayPhoneNudge({ gateway: kernel.relayGateway, clock: kernel.clock, pluginVersion: kernel.loadedVersion });
  return {
    ...ingest,
    // The exchange is its own capability: a Conduit that finds it knows this host queues changes and
    // answers voice reads on it (an older host has the phone family without it).
    capabilities: [...ingest.capabilities, { name: 'phone-changes', method: 'POST', path: postPhoneExchange.path }],
    async register(scope, kernel) {
      await ingest.register(scope, kernel);
      await registerPhoneExchange(scope, kernel, PHONE_VOICE_TOOLS);
    },
    tools: [calendarTool(nudgeFor), phoneTool(nudgeFor), contactsTool(nudgeFor)],
    sharedData: PHONE_SHARED_DATA,
    // The same providers the exchange's op "voice" answers, served by voice-tools as well.
    voiceTools: PHONE_VOICE_TOOLS,
  };
}

export const phoneFeature: HostFeature = createPhoneFeature();
