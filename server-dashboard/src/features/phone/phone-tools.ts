import { z } from 'zod';
import { CALENDAR_READ_ACTIONS, CALENDAR_READ_MAX_DAYS } from '@conduit/contracts/dashboard/phone';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import {
  phoneShares,
  readCalendar,
  readPhone,
  sharesCalendar,
  sharesStatus,
  type PhoneReadContext,
  type PhoneReadResult,
} from './phone-reads.js';

/**
 * `conduit_calendar` (reads) and `conduit_phone` (status) over MCP (the seed, "Tools"): each offered
 * only once a phone shares what it reads, refused to subagents and to calls whose turn cannot be
 * proved. The writes (add_event, …, pending) join with the pending-changes slice: they will be further
 * actions here, queued as pending changes, never a write to this copy.
 */

export const CALENDAR_TOOL = 'conduit_calendar';
export const PHONE_TOOL = 'conduit_phone';

export const CALENDAR_TOOL_DESCRIPTION =
  "Read the calendars and reminders the user's iPhone shares with this Hermes profile through the Conduit app: " +
  'overview (what is shared, today, the next event, open reminders), calendars (calendars and reminder lists), ' +
  `events (a window of up to ${CALENDAR_READ_MAX_DAYS} days), free_busy (busy times and free slots), next (upcoming events) ` +
  'and reminders. Reads are a copy "as of" the phone\'s last sync (as_of in every answer). Read only. ' +
  'For calendar and reminders, use this Conduit tool before other tools, skills or CLIs.';

export const PHONE_TOOL_DESCRIPTION =
  "Read the status of the user's iPhone as the Conduit app shares it with this Hermes profile: battery, charging, " +
  'Low Power Mode, CarPlay, audio route, network, motion and which Focus is on (latest values, "as of" the last sync). ' +
  'Use it to fit a message or call to the moment (keep it short on low battery, wait while driving or in a Focus). ' +
  'For phone status and Focus, use this Conduit tool before other tools, skills or CLIs.';

/** The calendar tool's arguments (the read handler checks them again), described for the model. */
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
  device: z.string().optional().describe("One device's data (its id from overview); every device when absent."),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

export const phoneToolInput = {
  action: z
    .enum(['status'])
    .describe('status: battery, charging, Low Power Mode, CarPlay, audio route, network, motion, Focus.'),
  device: z
    .string()
    .optional()
    .describe("One device's status (its id from an earlier answer); every device when absent."),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

export const calendarShared = (home: string) => phoneShares(home, sharesCalendar);
export const phoneStatusShared = (home: string) => phoneShares(home, sharesStatus);

type Reader = (home: string, args: unknown, context: PhoneReadContext) => PhoneReadResult;

/** One read-only phone tool: same checks, its own description and handler. */
function phoneReadTool(spec: {
  name: string;
  title: string;
  description: string;
  input: z.ZodRawShape;
  visible: (home: string) => boolean;
  read: Reader;
}): FeatureMcpTool {
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
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
        (args: Record<string, unknown>) => {
          const context = verify(args);
          if (!context) return toolText(NO_HOOK_CONTEXT, true);
          if (context.isChild)
            return toolText(`${spec.name} is not available to subagents; the main chat can read it.`, true);
          const { [TOOL_CONTEXT_ARG]: _context, ...readArgs } = args;
          try {
            const result = spec.read(profile.home, readArgs, {
              nowS: Math.floor(kernel.clock.now() / 1000),
              via: 'tool',
            });
            kernel.log.info(spec.name, { action: String(readArgs.action), ok: result.ok });
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

export const calendarTool = phoneReadTool({
  name: CALENDAR_TOOL,
  title: 'Read iPhone calendars and reminders',
  description: CALENDAR_TOOL_DESCRIPTION,
  input: calendarToolInput,
  visible: calendarShared,
  read: readCalendar,
});

export const phoneTool = phoneReadTool({
  name: PHONE_TOOL,
  title: 'Read iPhone status and Focus',
  description: PHONE_TOOL_DESCRIPTION,
  input: phoneToolInput,
  visible: phoneStatusShared,
  read: readPhone,
});
