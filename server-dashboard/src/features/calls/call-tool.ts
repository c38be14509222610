import { createHash } from 'node:crypto';
import { z } from 'zod';
import { CALL_LIMITS, newWatchId, settingsOf, type CallsFile, type CallsState, type CallWatch } from './calls-state.js';

/** The MCP tool Hermes calls to ring the user (toolset `conduit`), as Hermes names it: `mcp_<server>_<tool>`. */
export const CALL_USER_TOOL = 'conduit_call_user';

/** Where Conduit opens Calls from Hermes; Hermes puts it in its reply when calls are off. */
export const CALL_SETTINGS_LINK = 'conduit://settings/calls';

/** A call Hermes decides on waits this long for its `fits_rules: true` after `check_rules`. */
const RULES_CONFIRM_S = 10 * 60;

export const callUserInput = {
  reason: z
    .string()
    .min(1)
    .max(200)
    .describe('One spoken sentence saying why you are calling, said first when the user answers (≤ 200 characters).'),
  asked_by_user: z
    .boolean()
    .describe(
      'True only when the user asked to be called in this chat ("call me when it is done"); false when you decide the call is worth it.',
    ),
  fits_rules: z
    .boolean()
    .optional()
    .describe(
      "Only after this tool answered check_rules: true when the call fits the user's rules, which you have read.",
    ),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

export const CALL_USER_DESCRIPTION =
  "Phone the user through the Conduit app: the call rings on their iPhone (and Apple Watch) when this turn ends, so it opens on your finished reply, and your reason is said first. Use it when the user asked to be called, or for something they would want to hear about now. Read the skill calling-the-user first (installed with Conduit). Answers will_call, check_rules (read the user's rules, then call again with fits_rules: true if the call fits them), calls_off (tell the user, with the link, how to turn calls on), or refused.";

export type CallUserAnswer =
  | { status: 'will_call'; when: 'when this turn ends'; note?: string }
  | { status: 'check_rules'; rules: string; next: string }
  | { status: 'calls_off'; link: string; message: string }
  | { status: 'refused'; message: string };

function rulesDigest(rules: string): string {
  return createHash('sha256').update(rules, 'utf8').digest('hex').slice(0, 16);
}

const seededShape = z.object({ session_id: z.string(), rules: z.string(), at: z.number() });

/**
 * `conduit_call_user` for the session the hook named: a watch (origin `tool`) that rings when the
 * asking turn ends, through the same path as Conduit's watches (limits, presence and settings are
 * checked when it rings). A session already watched keeps its one watch, which takes the reason.
 */
export async function requestCall(
  state: CallsState,
  nowS: number,
  sessionId: string,
  input: { reason: string; asked_by_user: boolean; fits_rules?: boolean | undefined },
): Promise<CallUserAnswer> {
  return state.update<CallUserAnswer>(nowS, (file: CallsFile) => {
    const settings = settingsOf(file);
    const allowed = settings.enabled && (input.asked_by_user ? settings.when_asked : settings.decides);
    if (!allowed) {
      const which = input.asked_by_user ? '"Call when I ask"' : '"Hermes decides"';
      return {
        file,
        result: {
          status: 'calls_off',
          link: CALL_SETTINGS_LINK,
          message: settings.enabled
            ? `${which} is off in Conduit's Calls from Hermes settings.`
            : "Calls from Hermes are off in Conduit's settings.",
        },
      };
    }
    let next: CallsFile = file;
    const rules = settings.rules.trim();
    if (!input.asked_by_user && rules) {
      const digest = rulesDigest(rules);
      const seeded = file.seeded
        .map((entry) => seededShape.safeParse(entry))
        .flatMap((r) => (r.success ? [r.data] : []));
      const confirmed = seeded.some(
        (entry) => entry.session_id === sessionId && entry.rules === digest && nowS - entry.at <= RULES_CONFIRM_S,
      );
      const kept = file.seeded.filter((entry) => {
        const parsed = seededShape.safeParse(entry);
        return parsed.success && parsed.data.session_id !== sessionId && nowS - parsed.data.at <= RULES_CONFIRM_S;
      });
      if (!(input.fits_rules === true && confirmed)) {
        return {
          file: { ...file, seeded: [...kept, { session_id: sessionId, rules: digest, at: nowS }] },
          result: {
            status: 'check_rules',
            rules,
            next: 'If the call fits these rules, call conduit_call_user again with fits_rules: true within 10 minutes.',
          },
        };
      }
      next = { ...file, seeded: kept };
    }
    const existing = next.watches.find((watch) => watch.session_ids.includes(sessionId));
    if (existing) {
      const updated: CallWatch = { ...existing, reason: input.reason, asked: existing.asked || input.asked_by_user };
      return {
        file: { ...next, watches: next.watches.map((watch) => (watch === existing ? updated : watch)) },
        result: { status: 'will_call', when: 'when this turn ends' },
      };
    }
    if (next.watches.length >= CALL_LIMITS.watches) {
      return {
        file,
        result: { status: 'refused', message: 'Too many jobs are already waiting to call the user.' },
      };
    }
    const watch: CallWatch = {
      id: newWatchId(),
      session_ids: [sessionId],
      title: null,
      created_at: nowS,
      expires_at: nowS + CALL_LIMITS.watchTtlS,
      hold_until: null,
      pending: null,
      origin: 'tool',
      reason: input.reason,
      asked: input.asked_by_user,
    };
    const present = next.presence_until !== null && next.presence_until > nowS;
    return {
      file: { ...next, watches: [...next.watches, watch] },
      result: {
        status: 'will_call',
        when: 'when this turn ends',
        ...(present
          ? { note: 'The user is in a Live Voice call now; if they still are then, they get a notification instead.' }
          : {}),
      },
    };
  });
}
