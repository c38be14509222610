import { z } from 'zod';

/**
 * The JSON Hermes writes on a shell hook's stdin (agent/shell_hooks.py): the hook's name, the tool
 * fields for tool events, the session, the profile, and every other keyword argument under `extra`.
 * Unknown top-level fields are kept: Hermes adds fields between versions.
 */
export const hookPayloadSchema = z.looseObject({
  hook_event_name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z_:]+$/),
  tool_name: z.string().max(200).nullish(),
  tool_input: z.unknown().optional(),
  session_id: z.string().max(500).nullish(),
  cwd: z.string().max(4096).nullish(),
  profile: z.string().max(200).nullish(),
  extra: z.record(z.string(), z.unknown()).nullish(),
});

export type HookPayload = z.infer<typeof hookPayloadSchema>;

/** A keyword argument of the hook: top-level first (tool events), then `extra`. */
export function hookArg(payload: HookPayload, name: string): unknown {
  if (name === 'args' || name === 'tool_input') return payload.tool_input;
  const top = (payload as Record<string, unknown>)[name];
  if (top !== undefined && top !== null) return top;
  return payload.extra?.[name];
}

export function hookString(payload: HookPayload, name: string): string | undefined {
  const value = hookArg(payload, name);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

export function hookBool(payload: HookPayload, name: string): boolean {
  return hookArg(payload, name) === true;
}

/** The hooks this service asks Hermes to run it for (written by `conduit setup-hermes`). */
export const BRIDGED_HOOKS = [
  'pre_llm_call',
  'post_llm_call',
  'on_session_end',
  'pre_approval_request',
  'post_approval_response',
  'subagent_start',
  'subagent_stop',
  'pre_tool_call',
  'post_tool_call',
  // Each model request's context use, for Lock Screen progress; a Hermes without them skips them.
  'pre_api_request',
  'post_api_request',
] as const;
