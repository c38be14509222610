import { SKILL_MARKER, skillPath, type ConduitSkill } from '../../kernel/hermes-skills.js';

/**
 * The calling-the-user skill `conduit setup-hermes` installs in the profile's skills folder, which
 * conduit_call_user's description points to: when a call is worth it, how to word the reason, and
 * what each answer means. Hermes lists and loads it like any installed skill.
 */
export const CALLING_SKILL_NAME = 'calling-the-user';

export const CALLING_SKILL = `---
name: ${CALLING_SKILL_NAME}
description: When and how to phone the user through the Conduit app with conduit_call_user and call watches (conduit_call_watch), and what their answers mean.
---
${SKILL_MARKER}

# Calling the user

\`conduit_call_user\` (toolset conduit) rings the user's iPhone, and their Apple Watch, through the
Conduit app. The call rings **when this turn ends**, so write your final reply first: it is in the
chat the call opens, and the reason you give is said first when they answer.

## When to call

- The user asked to be called ("call me when it's done", "ring me if the build fails"): call with
  \`asked_by_user: true\` in the turn that has the result.
- You judge it is worth interrupting them (something they would want to hear about now, not later):
  call with \`asked_by_user: false\`. Use this sparingly; a notification reaches them anyway.
- Never to chat, to say you started something, or for routine results.

## The reason

One spoken sentence, at most 200 characters, that says why you are calling: "The deploy finished
and two tests failed." No markdown, no lists, no links.

## Answers

- \`will_call\`: it rings when this turn ends (unless the user is already in a call with you, their call
  limits are reached, or they turned calls off meanwhile; then they get the usual notification).
- \`check_rules\`: the user wrote rules for calls you decide on. Read them. If this call fits, call
  again with the same reason and \`fits_rules: true\` within 10 minutes; if not, don't call.
- \`calls_off\`: calls (or this kind of call) are off in Conduit. Tell the user, and give them the
  link in the answer, which opens Calls from Hermes in Conduit.
- \`refused\`: say why in one line; don't retry. Subagents cannot call; the agent that started them can.

## Call watches

The user's rules only filter the calls you decide on; they don't watch anything. When the user asks
to be called if something happens ("call me if the homelab is down for more than 10 minutes"), don't
poll it yourself and don't write a cron job: call \`conduit_call_watch\` and only describe the watch.

- \`what\`: the condition, in the user's words. The same what is the same watch, so asking again
  changes it instead of adding another.
- \`check\`: how a run checks it (the command, URL or tool, and what counts as happening).
- \`for_minutes\`: how long it must go on before the call; 0 calls as soon as a run sees it.
- \`hours\` (optional, \`HH:MM-HH:MM\`, may pass midnight) and \`unless\` (optional, when it does not
  count).

Conduit writes a Hermes cron job named "Call watch: <what>" that checks every few minutes. Each run
checks, calls \`conduit_watch_report\` with \`happening\` and one short spoken sentence about what it
found, and replies exactly the reply text that tool answers: \`[SILENT]\` while there is nothing to
tell the user. Conduit keeps the incident, waits out for_minutes and the allowed hours, and calls once
per incident with the run's sentence said first. In a watch's run, never call \`conduit_call_user\`.

When the user asks you to watch for what their "What's worth a call" note describes (Conduit's "Have
Hermes watch for this"), call \`conduit_call_watch\` with \`sync\` listing every watch the note
describes. It changes and adds watches to match; the ones the note no longer mentions come back in
\`not_in_note\`. Ask the user about those before removing one with \`remove: true\` and its \`id\`.
`;

export const callingSkill: ConduitSkill = { name: CALLING_SKILL_NAME, text: CALLING_SKILL };

export function callingSkillPath(profileHome: string): string {
  return skillPath(profileHome, CALLING_SKILL_NAME);
}
