import { PHONE_LABEL, PHONE_LIMITS, phoneRoutes } from '@conduit/contracts/dashboard/phone';
import type { HostFeature } from '../../kernel/feature.js';
import { sealedIngest } from '../phone-data/index.js';
import { PHONE_DEVICE_TABLES, PHONE_SCHEMA, parsePhoneBatch, storePhoneBatch, summarizePhone } from './phone-store.js';
import { calendarTool, phoneTool } from './phone-tools.js';

export { PHONE_SHAPE } from './phone-store.js';
export {
  phoneShares,
  readCalendar,
  readPhone,
  sharesCalendar,
  sharesStatus,
  type PhoneReadContext,
  type PhoneReadResult,
} from './phone-reads.js';
export {
  CALENDAR_TOOL,
  CALENDAR_TOOL_DESCRIPTION,
  calendarShared,
  calendarToolInput,
  PHONE_TOOL,
  PHONE_TOOL_DESCRIPTION,
  phoneStatusShared,
  phoneToolInput,
} from './phone-tools.js';
export { usingCalendarSkill } from './using-calendar-skill.js';

/**
 * Calendar and phone status (`phone`): the calendars, reminders, Focus and status snapshot a phone
 * shares with the profile, sealed end to end on the phone-data core under its own key and kept in the
 * profile's conduit-phone.sqlite3, held to the sharing state each batch declares (the seed, Calendar
 * and phone status). Pending changes (writes), alarms and contacts are later slices.
 */
export const phoneFeature: HostFeature = {
  ...sealedIngest({
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
  }),
  tools: [calendarTool, phoneTool],
};
