import { PLACE_RULE_LIMITS } from '@conduit/contracts/dashboard/location';
import { SKILL_MARKER, type ConduitSkill } from '../../kernel/hermes-skills.js';

/**
 * The using-location skill (the seed's conduit_push:using-location) `conduit setup-hermes` installs
 * beside the others: when to read where the user is with conduit_location, how (now first, locate only
 * when it matters), how to set place rules, and how to treat what comes back.
 */
export const USING_LOCATION_SKILL_NAME = 'using-location';

const EVERY_MIN = PLACE_RULE_LIMITS.everyMinS / 60;
const STALE_MIN = PLACE_RULE_LIMITS.eventMaxAgeS / 60;

export const USING_LOCATION_SKILL_TEXT = `---
name: ${USING_LOCATION_SKILL_NAME}
description: When and how to read where the user is with conduit_location (shared by the Conduit app), set place rules, and treat location as private.
---
${SKILL_MARKER}

# Using location

\`conduit_location\` (toolset conduit) reads where the user is as their iPhone shares it with this
profile through the Conduit app, at the detail they chose: a saved place's name only, an area of about
1 km (neighbourhood and town), or precise. Saved places (Home, Work…) live on the phone; this host gets
their names and kinds and, with each fix, distances to them, never their coordinates. A place the user
marked private reads only as "at a private place".

The tool appears only once a phone has shared location here. If the user asks where they are and it
isn't there, tell them they can turn sharing on in Conduit's Settings > Location; don't guess.

## Reading

1. **now first.** The latest fix of each phone: where (place, area), distances to saved places, and
   \`age_s\`. Say how old it is when that matters ("as of 20 minutes ago").
2. **places**: the saved places by name and kind (private ones only counted).
3. **history**: fixes and arrivals/departures over the last \`hours\` (default 24).
4. **distance_to**: straight-line distance from the latest fix to a saved place (\`place\`) or to
   \`lat\`,\`lon\`. It is not a route: for travel time use a maps tool if there is one.
5. **locate** only when a fresh position really matters and \`now\` is too old: it wakes the phone (at
   most one every 5 minutes, 30 a day, and only with background sharing on) and waits up to 20 s.
6. \`sharing: "paused"\` or \`"off"\` means the user paused or turned off sharing: say so, don't retry,
   and don't work around it.

## Place rules

When the user wants something to happen when they arrive somewhere or leave ("call me with my brief
when I leave home on weekdays", "remind me to water the plants when I get home"), set a place rule
instead of writing a cron job yourself:

- \`set_rule\` with \`what\` (a short name in their words; the same what changes that rule), \`task\` (a
  self-contained instruction for the run: anything a cron run can do, such as calling the user with
  conduit_call_user or sending a message), \`place\` (a saved place by name or id, or "any"), \`move\`
  (arrive, leave or either), optional \`days\` (mon…sun) and \`rule_hours\` (HH:MM-HH:MM, their local
  time), and \`repeat\`: daily (at most once a day, the default) or every (each match at least
  ${EVERY_MIN} minutes apart).
- Conduit keeps it as a Hermes cron job named "Place rule: <what>" that never runs on its own schedule;
  a matching arrival or departure runs it with a line naming the place and the move. Events over
  ${STALE_MIN} minutes old and events while sharing is paused never fire a rule, and it needs background
  sharing (arrivals and departures come only from it).
- \`rules\` lists them (with when each last fired); \`remove_rule\` (by \`id\` or \`what\`) removes the rule
  and its job. Remove one only when the user asks.
- Confirm what you set in one sentence: place, move, days, hours, and what will happen.

Calls can also skip places: the user picks them in Conduit (Calls from Hermes), not you.

## Privacy

- Where someone is, is sensitive. Read it only when the question or a task they gave you needs it, not
  out of curiosity and not to bring it up unasked. Every read is logged for the user to see.
- Answer at the detail the question needs ("you're about 2 km from work"), not coordinates; don't copy
  locations into memory, files or messages unless the user asks you to.
- Subagents can't use the tool; read it in the main chat.
`;

export const usingLocationSkill: ConduitSkill = { name: USING_LOCATION_SKILL_NAME, text: USING_LOCATION_SKILL_TEXT };
