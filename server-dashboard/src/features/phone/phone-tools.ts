import { z } from 'zod';
import {
  CALENDAR_READ_ACTIONS,
  CALENDAR_READ_MAX_DAYS,
  CALENDAR_WRITE_ACTIONS,
  PHONE_READ_ACTIONS,
  PHONE_WRITE_ACTIONS,
  WEEKDAYS,
} from '@conduit/contracts/dashboard/phone';
import type { FeatureKernel } from '../../kernel/feature.js';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { PhoneNudge } from './phone-nudge.js';
import { nudgeForModel } from '../../kernel/phone-changes-event.js';
import {
  phoneShares,
  readCalendar,
  readContacts,
  readPhone,
  sharesCalendar,
  sharesContacts,
  sharesPhone,
  sharesStatus,
  sharesAlarms,
  type PhoneReadContext,
  type PhoneReadResult,
} from './phone-reads.js';
import {
  changeForModel,
  proposeAlarmChange,
  proposeCalendarChange,
  readPending,
  type WriteOutcome,
} from './phone-writes.js';

/**
 * `conduit_calendar` (reads and writes), `conduit_phone` (status, alarms and timers) and
 * `conduit_contacts` over MCP (the seed, "Tools"): each offered only once a phone shares what it
 * reads, refused to subagents and to calls whose turn cannot be proved. A write never touches this
 * copy: it is kept as a pending change the phone applies, and the phone is nudged through the relay.
 */

export const CALENDAR_TOOL = 'conduit_calendar';
export const PHONE_TOOL = 'conduit_phone';
export const CONTACTS_TOOL = 'conduit_contacts';

const CALENDAR_READS_TEXT =
  "the calendars and reminders the user's iPhone shares with this Hermes profile through the Conduit app: " +
  'overview (what is shared, today, the next event, open reminders), calendars (calendars and reminder lists), ' +
  `events (a window of up to ${CALENDAR_READ_MAX_DAYS} days), free_busy (busy times and free slots), next (upcoming events) ` +
  'and reminders. Reads are a copy "as of" the phone\'s last sync (as_of in every answer).';
const CONDUIT_FIRST = 'For calendar and reminders, use this Conduit tool before other tools, skills or CLIs.';

/** The voice reads' description: a call offers the reads only (adding in a call is the phone's own tool). */
export const CALENDAR_VOICE_DESCRIPTION = `Read ${CALENDAR_READS_TEXT} Read only. ${CONDUIT_FIRST}`;

export const CALENDAR_TOOL_DESCRIPTION =
  `Read and change ${CALENDAR_READS_TEXT} ` +
  'Changes are proposals the phone applies: add_event, update_event, delete_event, add_reminder, update_reminder ' +
  'and complete_reminder each queue a pending change (the user approves it on the phone unless they let Hermes add ' +
  'without asking); pending says how changes went (pending, applied, edited, dismissed, failed, expired). ' +
  CONDUIT_FIRST;

const PHONE_STATUS_TEXT =
  "the status of the user's iPhone as the Conduit app shares it with this Hermes profile: battery, charging, " +
  'Low Power Mode, CarPlay, audio route, network, motion and which Focus is on (latest values, "as of" the last sync), ' +
  'and alarms (the alarms and timers Hermes set that are still on). ' +
  'Use it to fit a message or call to the moment (keep it short on low battery, wait while driving or in a Focus).';

export const PHONE_VOICE_DESCRIPTION = `Read ${PHONE_STATUS_TEXT} For phone status and Focus, use this Conduit tool before other tools, skills or CLIs.`;

export const PHONE_TOOL_DESCRIPTION =
  `Read ${PHONE_STATUS_TEXT} ` +
  'set_alarm (a one-off alarm at a time, or time HH:MM with days to repeat), set_timer (seconds) and cancel_alarm ' +
  'queue a pending change the phone applies (alarms ring through Silent and Focus); conduit_calendar pending says ' +
  'how it went. For phone status, Focus, alarms and timers, use this Conduit tool before other tools, skills or CLIs.';

export const CONTACTS_TOOL_DESCRIPTION =
  'Read the people the user picked to share from their iPhone through the Conduit app: name, nickname, relation ' +
  '("wife"), phone numbers, emails, birthday and organization. people lists them all, or those matching query. ' +
  'Only the people the user picked are here, never the whole address book. ' +
  "For the user's contacts, use this Conduit tool before other tools, skills or CLIs.";

const CONTEXT_ARG = z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.');
const DEVICE_ARG = z
  .string()
  .optional()
  .describe("One device's data (its id from overview); every device when absent.");

/** The calendar tool's read arguments (the read handler checks them again), described for the model. */
export const calendarToolInput = {
  action: z.enum(CALENDAR_READ_ACTIONS).describe('What to read; overview first.'),
  start_date: z
    .string()
    .optional()
    .describe("events, free_busy: first day, YYYY-MM-DD in the phone's time zone (default today)."),
  days: z
    .number()
    .int()
    .min(1)
    .max(CALENDAR_READ_MAX_DAYS)
    .optional()
    .describe(
      `events, free_busy: days from start_date, 1–${CALENDAR_READ_MAX_DAYS} (default 7 for events, 1 for free_busy).`,
    ),
  calendar: z.string().optional().describe('events: one calendar (its id from calendars).'),
  list: z.string().optional().describe('reminders: one list (its id from calendars).'),
  query: z.string().optional().describe('events, reminders: only items whose title (or location) contains this.'),
  count: z.number().int().min(1).max(20).optional().describe('next: how many upcoming events (default 3).'),
  min_minutes: z
    .number()
    .int()
    .min(5)
    .max(1440)
    .optional()
    .describe('free_busy: shortest free slot to list (default 30).'),
  include_completed: z.boolean().optional().describe('reminders: completed ones too (default false).'),
  device: DEVICE_ARG,
  _conduit_context: CONTEXT_ARG,
};

const TIME_TEXT = "YYYY-MM-DDTHH:MM in the phone's local time (or with an offset), or YYYY-MM-DD alone for a whole day";

/** The calendar tool's arguments over MCP: the reads and the writes (each checked again by its handler). */
export const calendarToolFullInput = {
  ...calendarToolInput,
  action: z
    .enum([...CALENDAR_READ_ACTIONS, ...CALENDAR_WRITE_ACTIONS])
    .describe('What to read or change; overview first. Writes queue a change the phone applies.'),
  calendar: z
    .string()
    .optional()
    .describe('events: one calendar; add_event: the calendar to add to (its id from calendars).'),
  list: z.string().optional().describe('reminders: one list; add_reminder: the list to add to.'),
  title: z.string().optional().describe('add_event, add_reminder, update_*: the title.'),
  start: z.string().optional().describe(`add_event, update_event: when it starts, ${TIME_TEXT}.`),
  end: z.string().optional().describe('add_event, update_event: when it ends (default an hour after start).'),
  all_day: z.boolean().optional().describe('add_event, update_event: a whole-day event.'),
  location: z.string().optional().describe('add_event, update_event: where.'),
  notes: z.string().optional().describe('add_*, update_*: notes, at most 2,000 characters.'),
  event: z.string().optional().describe('update_event, delete_event: the event (its id from events).'),
  reminder: z.string().optional().describe('update_reminder, complete_reminder: the reminder (its id from reminders).'),
  due: z.string().optional().describe(`add_reminder, update_reminder: when it is due, ${TIME_TEXT}.`),
  priority: z
    .number()
    .int()
    .min(0)
    .max(9)
    .optional()
    .describe('add_reminder, update_reminder: 0 none, 1 high … 9 low.'),
  id: z.string().optional().describe('pending: one change (its id from an earlier answer); all when absent.'),
  device: z
    .string()
    .optional()
    .describe('One device (its id from overview); reads cover every device, writes go to the last one synced.'),
};

/** conduit_phone's read arguments (a voice read offers these only). */
export const phoneToolInput = {
  action: z
    .enum(PHONE_READ_ACTIONS)
    .describe(
      'status: battery, charging, Low Power Mode, CarPlay, audio route, network, motion, Focus. alarms: the alarms and timers Hermes set.',
    ),
  device: z
    .string()
    .optional()
    .describe("One device's status (its id from an earlier answer); every device when absent."),
  _conduit_context: CONTEXT_ARG,
};

export const phoneToolFullInput = {
  ...phoneToolInput,
  action: z
    .enum([...PHONE_READ_ACTIONS, ...PHONE_WRITE_ACTIONS])
    .describe('status, alarms (reads); set_alarm, set_timer, cancel_alarm (changes the phone applies).'),
  at: z.string().optional().describe("set_alarm: a one-off alarm, YYYY-MM-DDTHH:MM in the phone's local time."),
  time: z.string().optional().describe('set_alarm: HH:MM (24-hour) for a repeating alarm, with days.'),
  days: z.array(z.enum(WEEKDAYS)).optional().describe('set_alarm with time: the days it rings.'),
  seconds: z.number().int().min(1).max(86_400).optional().describe('set_timer: how long, in seconds.'),
  label: z.string().optional().describe('set_alarm, set_timer: what it is for.'),
  alarm: z.string().optional().describe('cancel_alarm: the alarm or timer (its id from alarms).'),
};

export const contactsToolInput = {
  action: z.enum(['people']).describe('people: the people the user shares, all or those matching query.'),
  query: z
    .string()
    .optional()
    .describe('Only people whose name, nickname, relation, organization, number or email contains this.'),
  device: DEVICE_ARG,
  _conduit_context: CONTEXT_ARG,
};

export const calendarShared = (home: string) => phoneShares(home, sharesCalendar);
export const phoneStatusShared = (home: string) => phoneShares(home, sharesStatus);
export const alarmsShared = (home: string) => phoneShares(home, sharesAlarms);
export const contactsShared = (home: string) => phoneShares(home, sharesContacts);
const phoneShared = (home: string) => phoneShares(home, sharesPhone);

type Reader = (home: string, args: unknown, context: PhoneReadContext) => PhoneReadResult;
/** A write action: queues a change (the nudge follows) or answers like a read. */
type Writer = (home: string, args: unknown, nowS: number) => WriteOutcome;

interface ToolEnv {
  profile: ProfileScope;
  kernel: FeatureKernel;
  nudge: PhoneNudge;
}

/** One phone tool: reads by action, writes (when any) queued and nudged; the same checks for all. */
function phoneDataTool(spec: {
  name: string;
  title: string;
  description: string;
  input: z.ZodRawShape;
  visible: (home: string) => boolean;
  read: Reader;
  writes?: {
    actions: readonly string[];
    write: Writer;
    pending?: (home: string, args: unknown, nowS: number) => PhoneReadResult;
  };
  nudgeFor: (kernel: FeatureKernel) => PhoneNudge;
}): FeatureMcpTool {
  async function run(args: Record<string, unknown>, env: ToolEnv) {
    const nowS = Math.floor(env.kernel.clock.now() / 1000);
    const action = String(args.action);
    if (action === 'pending' && spec.writes?.pending) return spec.writes.pending(env.profile.home, args, nowS);
    if (!spec.writes?.actions.includes(action)) return spec.read(env.profile.home, args, { nowS, via: 'tool' });
    const outcome = spec.writes.write(env.profile.home, args, nowS);
    if (!outcome.ok) return outcome;
    // After the store is closed: the relay's answer never holds the profile's database.
    const nudged = await env.nudge.nudge(env.profile, outcome.change);
    env.kernel.log.info(`${spec.name} change`, {
      kind: outcome.change.kind,
      asks: outcome.change.ask,
      nudge: nudged.kind,
    });
    return {
      ok: true as const,
      action,
      change: changeForModel(outcome.change),
      ...nudgeForModel(nudged, 'the phone sees the change when it next syncs'),
    };
  }

  return {
    name: spec.name,
    needsContext: true,
    visible: ({ profile }) => spec.visible(profile.home),
    register(server, { profile, kernel, verify }) {
      server.registerTool(
        spec.name,
        {
          title: spec.title,
          description: spec.description,
          inputSchema: spec.input,
          annotations: { readOnlyHint: spec.writes === undefined, openWorldHint: false },
        },
        async (args: Record<string, unknown>) => {
          const context = verify(args);
          if (!context) return toolText(NO_HOOK_CONTEXT, true);
          if (context.isChild)
            return toolText(`${spec.name} is not available to subagents; the main chat can use it.`, true);
          const { [TOOL_CONTEXT_ARG]: _context, ...toolArgs } = args;
          try {
            const result = await run(toolArgs, { profile, kernel, nudge: spec.nudgeFor(kernel) });
            kernel.log.info(spec.name, { action: String(toolArgs.action), ok: result.ok });
            return result.ok ? toolText(JSON.stringify(result)) : toolText(result.error, true);
          } catch (error) {
            kernel.log.warn(`${spec.name} failed`, { error: error instanceof Error ? error.name : 'error' });
            return toolText('The phone data of this profile could not be read.', true);
          }
        },
      );
    },
  };
}

export function calendarTool(nudgeFor: (kernel: FeatureKernel) => PhoneNudge): FeatureMcpTool {
  return phoneDataTool({
    name: CALENDAR_TOOL,
    title: 'Read and change iPhone calendars and reminders',
    description: CALENDAR_TOOL_DESCRIPTION,
    input: calendarToolFullInput,
    visible: calendarShared,
    read: readCalendar,
    writes: {
      actions: CALENDAR_WRITE_ACTIONS.filter((action) => action !== 'pending'),
      write: proposeCalendarChange,
      pending: readPending,
    },
    nudgeFor,
  });
}

export function phoneTool(nudgeFor: (kernel: FeatureKernel) => PhoneNudge): FeatureMcpTool {
  return phoneDataTool({
    name: PHONE_TOOL,
    title: 'Read iPhone status, Focus and alarms; set alarms and timers',
    description: PHONE_TOOL_DESCRIPTION,
    input: phoneToolFullInput,
    visible: phoneShared,
    read: readPhone,
    writes: { actions: PHONE_WRITE_ACTIONS, write: proposeAlarmChange },
    nudgeFor,
  });
}

export function contactsTool(nudgeFor: (kernel: FeatureKernel) => PhoneNudge): FeatureMcpTool {
  return phoneDataTool({
    name: CONTACTS_TOOL,
    title: 'Read the contacts the user shares from iPhone',
    description: CONTACTS_TOOL_DESCRIPTION,
    input: contactsToolInput,
    visible: contactsShared,
    read: readContacts,
    nudgeFor,
  });
}
