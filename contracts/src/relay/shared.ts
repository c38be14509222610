import { z } from 'zod';

/**
 * Pieces several relay route families share. Bodies are declared for documentation and the typed
 * clients; the relay validates them in its handlers in the reference's order of checks (rate limits
 * and authentication before the body is read), hence `bodyContentType` on these routes.
 */
export const JSON_BODY = 'application/json';

export const errorOf = <const Codes extends readonly [string, ...string[]]>(codes: Codes) =>
  z.object({ error: z.enum(codes) });

export const installationIdParam = z.object({ id: z.string().regex(/^[0-9a-f-]+$/) });

export const preferencesSchema = z
  .object({
    enabled: z.boolean(),
    approval_needed: z.boolean(),
    input_needed: z.boolean(),
    response_ready: z.boolean(),
    turn_failed: z.boolean(),
    background_task_finished: z.boolean(),
    call_requested: z.boolean(),
    completion_sound: z.boolean(),
    attention_sound: z.boolean(),
    show_previews: z.boolean(),
    decision_cards: z.boolean(),
  })
  .describe('Normalised notification preferences; a non-boolean value falls back to its default.');

export const installationSchema = z.object({
  id: z.string(),
  active: z.boolean(),
  gateways: z.array(z.object({ id: z.string(), name: z.string() })),
  preferences: preferencesSchema,
  voip: z.boolean(),
  watch_voip: z.boolean(),
  updated_at: z.string(),
});

export const unauthorized = { description: 'Missing or wrong credential.', schema: errorOf(['unauthorized']) };
export const rateLimited = {
  description: 'A per-key limit or a process-wide budget is spent.',
  schema: errorOf(['rate_limited']),
};
export const tooLarge = { description: 'The body exceeds 32,768 characters.', schema: errorOf(['payload_too_large']) };
