import { HEALTH_READ_MAX_DAYS } from '@conduit/contracts/dashboard/health';
import { SKILL_MARKER, type ConduitSkill } from '../../kernel/hermes-skills.js';

/**
 * The reading-health-data skill (the seed's conduit_push:reading-health-data) `conduit setup-hermes`
 * installs beside calling-the-user: when to read the Health data a phone shares with conduit_health,
 * how (overview first, windows, UTC days), and how to treat what comes back.
 */
export const READING_HEALTH_SKILL_NAME = 'reading-health-data';

export const READING_HEALTH_SKILL_TEXT = `---
name: ${READING_HEALTH_SKILL_NAME}
description: When and how to read the user's Apple Health data with conduit_health (shared by the Conduit app), and how to treat it.
---
${SKILL_MARKER}

# Reading health data

\`conduit_health\` (toolset conduit) reads the Apple Health summaries the user's iPhone (and Apple
Watch) shares with this profile through the Conduit app: daily and hourly totals (steps, energy, heart
rate…), sleep nights and stages, workouts, and raw readings where the user shares them. It is
**read-only**: nothing you do with it changes their Health data.

The tool appears only once a phone has synced Health data here. If the user asks about their health
and it isn't there, tell them they can turn sharing on in Conduit's Settings > Health (per category);
don't guess from memory or other sources.

## When to use it

- The user asks about their own body or activity: "how did I sleep?", "how active was I this week?",
  "what was my resting heart rate yesterday?", "when did I last run?".
- A task they gave you needs it (a weekly summary they asked for, a cron job they set up).
- Not out of curiosity, and not to bring health up unasked.

## How

1. **Overview first.** \`action: "overview"\` says which devices share, the latest daily values, last
   night's sleep and how many workouts there are, so you know which metrics and days exist.
2. Then the narrowest read that answers: \`daily\` or \`hourly\` totals (with \`metric\`, e.g.
   \`stepCount\`, \`heartRate\` as overview names them), \`sleep\`, \`workouts\`, or \`samples\` (raw readings).
3. **Windows**: at most ${HEALTH_READ_MAX_DAYS} days per call. \`days\` counts back from today (default 7), or
   forward from \`start_date\`; give both \`start_date\` and \`end_date\` for an exact range. Dates are
   **UTC days** (\`YYYY-MM-DD\`); for a longer span, make several calls.
4. Times in results are Unix seconds; sleep and durations are in seconds, so convert before you say
   them. A daily total covers the phone's local day, which may start a few hours off the UTC date.
5. \`truncated: true\` means there were more rows: narrow with \`metric\` or fewer days.
6. With several devices, pass \`device\` (its id from overview) to read one.
7. \`{"ok": false, "error"}\` says what to fix (a window over ${HEALTH_READ_MAX_DAYS} days, an unknown argument) or that
   nothing is shared.

## Privacy

- It's the user's data. What the tool returns goes to your model like any tool result (Conduit told
  the user so before they turned sharing on), so read only what the question needs.
- Answer with the figures that matter; don't repeat more values, readings or history than needed, and
  don't copy them into memory, files, messages or other tools unless the user asks you to.
- Subagents can't use the tool; read it in the main chat.
- You are not a doctor: describe what the data shows and suggest a professional for anything worrying.
`;

export const readingHealthSkill: ConduitSkill = { name: READING_HEALTH_SKILL_NAME, text: READING_HEALTH_SKILL_TEXT };
