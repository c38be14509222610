import { z } from 'zod';
import { PRESENT_LIMITS, type PresentState } from '@conduit/contracts/dashboard/present';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { PresentNudge } from './present-nudge.js';
import { nudgeForModel } from '../../kernel/phone-changes-event.js';
import { waitForAnswer } from './present-signals.js';
import {
  PresentStore,
  presentOffered,
  withCancelled,
  withSeen,
  type PromptInput,
  type StoredPrompt,
} from './present-store.js';
import { announceChange, createPrompt } from './present-prompts.js';

/** The MCP tool that asks the user to OK an action on their phone (the seed, conduit_present). */
export const PRESENT_TOOL = 'conduit_present';

export const PRESENT_TOOL_DESCRIPTION =
  'Ask the user to OK an action on their phone before you do it (sending a message for them, buying, deleting): Conduit shows a panel over everything, calls included, answered by tap or, in a call, by voice. ' +
  `confirm keeps a prompt (title ≤${PRESENT_LIMITS.titleMaxChars} characters, a Markdown preview of exactly what you will do ≤${PRESENT_LIMITS.previewMaxChars}, action_label ≤${PRESENT_LIMITS.actionLabelMaxChars} for the button, up to ${PRESENT_LIMITS.spokenYesMax} spoken_yes phrases) and wakes the phone; ` +
  `wait_seconds (≤${PRESENT_LIMITS.waitMaxSeconds}) waits for the answer. status lists waiting prompts and answers you have not seen (or one by id); cancel takes one back. ` +
  'States: waiting, confirmed, declined, edit, expired, cancelled. Only confirmed means go ahead; on edit, send the corrected request (edit_text) yourself, confirmed again.';

/** The tool's arguments as the model sees them; the bounds are checked in confirmArgs, with clear messages. */
export const presentToolInput = {
  action: z.enum(['confirm', 'status', 'cancel']).describe('confirm asks; status reads; cancel takes a prompt back.'),
  title: z.string().optional().describe(`confirm: what to OK, ≤${PRESENT_LIMITS.titleMaxChars} characters.`),
  preview: z
    .string()
    .optional()
    .describe(`confirm: Markdown showing exactly what you will do, ≤${PRESENT_LIMITS.previewMaxChars} characters.`),
  action_label: z
    .string()
    .optional()
    .describe(
      `confirm: the button, e.g. "Send", ≤${PRESENT_LIMITS.actionLabelMaxChars} characters; default "Confirm".`,
    ),
  spoken_yes: z
    .array(z.string())
    .optional()
    .describe(`confirm: up to ${PRESENT_LIMITS.spokenYesMax} phrases that mean yes by voice ("send it").`),
  ttl_minutes: z
    .number()
    .optional()
    .describe(
      `confirm: minutes the prompt waits, 1–${PRESENT_LIMITS.ttlMaxMinutes}; default ${PRESENT_LIMITS.ttlDefaultMinutes}.`,
    ),
  wait_seconds: z
    .number()
    .optional()
    .describe(
      `confirm: seconds to wait for the answer, 0–${PRESENT_LIMITS.waitMaxSeconds}; default 0 (check with status).`,
    ),
  id: z.string().optional().describe('status (one prompt) and cancel: the id confirm returned.'),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

/** A single line of text: trimmed, control characters out. */
const line = (max: number, name: string) =>
  z
    .string({ error: `${name} must be text` })
    .transform((text) => text.replace(/\p{Cc}+/gu, ' ').trim())
    .pipe(
      z
        .string()
        .min(1, { error: `${name} must not be empty` })
        .max(max, { error: `${name} must be at most ${max} characters` }),
    );

const confirmArgs = z.object({
  title: line(PRESENT_LIMITS.titleMaxChars, 'title'),
  preview: z
    .string({ error: 'preview must be text (Markdown)' })
    .transform((text) => text.trim())
    .pipe(
      z
        .string()
        .min(1, { error: 'preview must show what you will do' })
        .max(PRESENT_LIMITS.previewMaxChars, {
          error: `preview must be at most ${PRESENT_LIMITS.previewMaxChars} characters`,
        }),
    ),
  action_label: line(PRESENT_LIMITS.actionLabelMaxChars, 'action_label').default('Confirm'),
  spoken_yes: z
    .array(line(PRESENT_LIMITS.spokenYesMaxChars, 'each spoken_yes phrase'), {
      error: 'spoken_yes must be a list of phrases',
    })
    .max(PRESENT_LIMITS.spokenYesMax, { error: `spoken_yes takes at most ${PRESENT_LIMITS.spokenYesMax} phrases` })
    .default([]),
  ttl_minutes: z
    .int({ error: 'ttl_minutes must be a whole number' })
    .min(1, { error: 'ttl_minutes must be at least 1' })
    .max(PRESENT_LIMITS.ttlMaxMinutes, { error: `ttl_minutes must be at most ${PRESENT_LIMITS.ttlMaxMinutes}` })
    .default(PRESENT_LIMITS.ttlDefaultMinutes),
  wait_seconds: z
    .int({ error: 'wait_seconds must be a whole number' })
    .min(0, { error: 'wait_seconds must be 0 or more' })
    .max(PRESENT_LIMITS.waitMaxSeconds, { error: `wait_seconds must be at most ${PRESENT_LIMITS.waitMaxSeconds}` })
    .default(0),
});

/** What the model is told each state means, so "waiting" is never read as a yes. */
const STATE_NOTES: Record<PresentState, string> = {
  waiting: 'The user has not answered yet. Do not go ahead; check later with action status and this id.',
  confirmed: 'The user confirmed. Go ahead with exactly what the prompt showed.',
  declined: 'The user declined. Do not go ahead.',
  edit: 'The user asked for a change (edit_text). Do not go ahead with this; send the corrected request yourself, confirmed again.',
  expired: 'Nobody answered before the prompt expired. Do not go ahead.',
  cancelled: 'This prompt was cancelled. Do not go ahead.',
};

const iso = (unixS: number): string => new Date(unixS * 1000).toISOString();

/** A prompt as the model reads it: its state, whether to go ahead, and what that means. */
export function promptForModel(prompt: StoredPrompt) {
  return {
    id: prompt.id,
    state: prompt.state,
    go_ahead: prompt.state === 'confirmed',
    title: prompt.title,
    session_id: prompt.session_id,
    created_at: iso(prompt.created_at),
    expires_at: iso(prompt.expires_at),
    ...(prompt.finished_at !== null && prompt.state !== 'waiting' ? { finished_at: iso(prompt.finished_at) } : {}),
    ...(prompt.via ? { via: prompt.via } : {}),
    ...(prompt.state === 'edit' ? { edit_text: prompt.edit_text ?? '' } : {}),
    note: STATE_NOTES[prompt.state],
  };
}

const answer = (body: Record<string, unknown>) => toolText(JSON.stringify(body));
const refuse = (error: string) => toolText(JSON.stringify({ ok: false, error }), true);

/** The first readable message of a failed parse. */
function firstIssue(error: z.ZodError): string {
  return error.issues[0]?.message ?? 'The arguments are not valid';
}

interface CallEnv {
  profile: ProfileScope;
  kernel: FeatureKernel;
  nudge: PresentNudge;
  sessionId: string;
  abort: AbortSignal | undefined;
}

async function confirm(args: Record<string, unknown>, env: CallEnv) {
  const parsed = confirmArgs.safeParse(args);
  if (!parsed.success) return refuse(firstIssue(parsed.error));
  const input: PromptInput = {
    title: parsed.data.title,
    preview: parsed.data.preview,
    actionLabel: parsed.data.action_label,
    spokenYes: parsed.data.spoken_yes,
    sessionId: env.sessionId,
    ttlMinutes: parsed.data.ttl_minutes,
  };
  const startedMs = env.kernel.clock.now();
  const created = await createPrompt(env.profile.home, input, startedMs / 1000);
  if (!created.ok) return refuse(created.message);
  const nudged = await env.nudge.nudge(env.profile, created.prompt);
  env.kernel.log.info('conduit_present confirm', { nudge: nudged.kind, wait: parsed.data.wait_seconds > 0 });
  let prompt = created.prompt;
  if (parsed.data.wait_seconds > 0) {
    prompt =
      (await waitForAnswer(env.profile.home, prompt.id, {
        // Counted from the call's start: a slow relay shortens the wait rather than lengthening the call.
        waitMs: parsed.data.wait_seconds * 1000 - (env.kernel.clock.now() - startedMs),
        clock: env.kernel.clock,
        timers: env.kernel.timers,
        ...(env.abort ? { abort: env.abort } : {}),
      })) ?? prompt;
    if (prompt.state !== 'waiting') await markSeen(env, [prompt.id]);
  }
  return answer({
    ok: true,
    prompt: promptForModel(prompt),
    ...nudgeForModel(nudged, 'Conduit sees the prompt when it next syncs'),
  });
}

function markSeen(env: CallEnv, ids: string[]): Promise<void> {
  return new PresentStore(env.profile.home).update(env.kernel.clock.now() / 1000, (file) => ({
    file: withSeen(file, ids),
    result: undefined,
  }));
}

async function status(args: Record<string, unknown>, env: CallEnv) {
  const id = typeof args.id === 'string' && args.id !== '' ? args.id : null;
  const store = new PresentStore(env.profile.home);
  // The answers told now are marked seen in the same step, so a second status does not repeat them.
  const prompts = await store.update(env.kernel.clock.now() / 1000, (file) => {
    const shown = id
      ? file.prompts.filter((prompt) => prompt.id === id)
      : file.prompts.filter(
          (prompt) => prompt.session_id === env.sessionId && (prompt.state === 'waiting' || !prompt.seen),
        );
    return {
      file: withSeen(
        file,
        shown.map((prompt) => prompt.id),
      ),
      result: shown,
    };
  });
  if (id) {
    const [prompt] = prompts;
    return prompt
      ? answer({ ok: true, prompt: promptForModel(prompt) })
      : refuse(`No confirm prompt ${id} (answers are kept a week).`);
  }
  return answer({
    ok: true,
    prompts: prompts.map(promptForModel),
    ...(prompts.length === 0 ? { note: 'No prompt of this chat is waiting, and no answer is new.' } : {}),
  });
}

async function cancel(args: Record<string, unknown>, env: CallEnv) {
  const id = typeof args.id === 'string' && args.id !== '' ? args.id : null;
  if (!id) return refuse('cancel needs the id confirm returned.');
  const store = new PresentStore(env.profile.home);
  const nowS = env.kernel.clock.now() / 1000;
  const prompt = await store.update(nowS, (file) => {
    const next = withCancelled(file, id, nowS);
    return { file: next, result: next.prompts.find((candidate) => candidate.id === id) ?? null };
  });
  if (!prompt) return refuse(`No confirm prompt ${id} (answers are kept a week).`);
  announceChange(env.profile.home);
  return answer({ ok: true, prompt: promptForModel(prompt) });
}

/** conduit_present over MCP: offered once a Conduit with present-v1 has exchanged; subagents cannot ask. */
export function presentTool(nudgeFor: (kernel: FeatureKernel) => PresentNudge): FeatureMcpTool {
  return {
    name: PRESENT_TOOL,
    needsContext: true,
    visible: async ({ profile, kernel }) =>
      presentOffered(await new PresentStore(profile.home).read(kernel.clock.now() / 1000)),
    register(server, { profile, kernel, verify }) {
      server.registerTool(
        PRESENT_TOOL,
        {
          title: 'Ask the user to confirm on their phone',
          description: PRESENT_TOOL_DESCRIPTION,
          inputSchema: presentToolInput,
          annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
        },
        async (args, extra) => {
          const context = verify(args);
          if (!context) return refuse(NO_HOOK_CONTEXT);
          // A subagent's OK would be asked out of the user's sight of the chat; its parent can ask.
          if (context.isChild)
            return refuse(`${PRESENT_TOOL} is not available to subagents; the main chat can ask the user.`);
          const env: CallEnv = {
            profile,
            kernel,
            nudge: nudgeFor(kernel),
            sessionId: context.sessionId,
            abort: extra.signal,
          };
          try {
            if (args.action === 'confirm') return await confirm(args, env);
            if (args.action === 'status') return await status(args, env);
            return await cancel(args, env);
          } catch (error) {
            kernel.log.warn('conduit_present failed', { error: error instanceof Error ? error.name : 'error' });
            return refuse('The confirm prompts of this profile could not be read or written.');
          }
        },
      );
    },
  };
}
