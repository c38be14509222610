import { CALENDAR_READ_MAX_DAYS } from '@conduit/contracts/dashboard/phone';
import { SKILL_MARKER, type ConduitSkill } from '../../kernel/hermes-skills.js';

/**
 * The using-calendar skill (the seed's conduit_push:using-calendar) `conduit setup-hermes` installs
 * beside the others: when to read the calendars, reminders and phone status a phone shares with
 * conduit_calendar and conduit_phone, how, and how to treat what comes back.
 */
export const USING_CALENDAR_SKILL_NAME = 'using-calendar';

export const USING_CALENDAR_SKILL_TEXT = `---
name: ${USING_CALENDAR_SKILL_NAME}
description: When and how to read and change the user's iPhone calendars, reminders, alarms and timers, and read Focus, phone status and contacts, with conduit_calendar, conduit_phone and conduit_contacts (shared by the Conduit app).
---
${SKILL_MARKER}

# Using the calendar and phone status

\`conduit_calendar\` (toolset conduit) reads the calendars (every account on the phone) and Reminders the
user's iPhone shares with this profile through the Conduit app, and proposes changes to them.
\`conduit_phone\` reads the phone's status: battery, charging, Low Power Mode, CarPlay, audio route,
network, motion and which Focus is on, and the alarms and timers you set; it also sets and cancels them.
\`conduit_contacts\` reads the people the user picked to share (name, nickname, relation, numbers,
emails, birthday, organization). Each appears only once the phone shares what it reads; if the user asks
and it isn't there, tell them they can turn it on in Conduit's Settings > Calendar & phone. Don't guess from memory or other sources.

## When to use them

- "What's on today?", "am I free Thursday afternoon?", "when is the dentist?", "what do I still have to do?"
- "Add the dentist on Thursday at 3", "remind me to call mum", "wake me at 6:30 on weekdays", "set a timer for ten minutes".
- "What's Anna's number?", "when is my wife's birthday?": \`conduit_contacts\` (\`query\`).
- Before you propose a time, to find a free slot.
- \`conduit_phone\` to fit the moment: keep it short when the battery is low or Low Power Mode is on,
  don't call while they're driving (CarPlay, motion \`automotive\`) or in a Focus unless asked.

## How

1. **Overview first.** \`action: "overview"\`: what is shared, today's count, the next event, open and overdue reminders.
2. Then the narrowest read: \`events\` (\`start_date\`, \`days\` up to ${CALENDAR_READ_MAX_DAYS}, \`calendar\`, \`query\`),
   \`free_busy\` (busy times and free slots of at least \`min_minutes\`), \`next\` (\`count\`), \`reminders\`
   (\`list\`, \`query\`, \`include_completed\`), \`calendars\` (calendars and lists with their ids).
3. **It's a copy.** Every answer says \`as_of\`, the phone's last sync; say so when it matters ("as of 10 minutes ago").
4. Times are ISO UTC; \`start_local\` / \`due_local\` are the phone's local time (\`time_zone\`). Days
   (\`start_date\`) are the phone's days.
5. Only what the user shares is here: the calendars and lists they picked, within how far back and
   ahead they chose. Notes, links and attendees appear only when they include them. An empty answer can
   mean "not shared", not "nothing planned": say which calendars you looked at.
6. \`truncated: true\` means there were more rows: narrow the window, calendar or query.

## Changes

You can't touch the phone's calendar directly. Every change is a **pending change** the phone applies:

- \`conduit_calendar\`: \`add_event\` (\`calendar\` id, \`title\`, \`start\`, optional \`end\`, \`all_day\`,
  \`location\`, \`notes\`), \`update_event\` / \`delete_event\` (\`event\` id), \`add_reminder\` (\`list\` id,
  \`title\`, optional \`due\`, \`priority\`, \`notes\`), \`update_reminder\` / \`complete_reminder\` (\`reminder\` id).
- \`conduit_phone\`: \`set_alarm\` (\`at\` for a one-off, or \`time\` HH:MM with \`days\` to repeat),
  \`set_timer\` (\`seconds\`), \`cancel_alarm\` (\`alarm\` id from \`alarms\`). Alarms ring through Silent and Focus.
- Times are \`YYYY-MM-DDTHH:MM\` in the phone's local time (or with an offset); a date alone is a whole day.
- Take ids from reads (\`calendars\`, \`events\`, \`reminders\`, \`alarms\`); never invent them.

How it goes: the phone gets a notification and the user approves (\`asks_user: true\`), or, for adds the
user lets you make without asking, the phone applies it silently. Updates, deletes, completions and
cancels always ask, and so do adds to shared calendars or lists. So say "I've asked your phone to add
it" rather than "added", unless \`pending\` says \`applied\`.

\`conduit_calendar\` with \`action: "pending"\` (optionally \`id\`) shows how changes went: \`pending\`
(waiting for the phone), \`applied\`, \`edited\` (the user changed it; \`note\` may say how), \`dismissed\`
(the user said no: don't ask again unprompted), \`failed\` (\`note\` says why) or \`expired\` (not taken
within 7 days). At most 50 changes wait at once, and 50 alarms and timers per phone.

## Privacy

- It's the user's data. What the tools return goes to your model like any tool result (Conduit told the
  user so before they turned sharing on), so read only what the question needs.
- Don't copy events, attendees, reminders or contacts into memory, files, messages or other tools unless asked.
- Subagents can't use the tools; read them in the main chat.
`;

export const usingCalendarSkill: ConduitSkill = { name: USING_CALENDAR_SKILL_NAME, text: USING_CALENDAR_SKILL_TEXT };
