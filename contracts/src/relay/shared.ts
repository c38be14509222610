import { z } from 'zod';

/**
 * Pieces several relay route families share. The relay reads every body in its handler
 * (`bodyReading: 'handler'`), after the checks the reference makes first (rate limits, authentication);
 * the body schema then validates it, in the reference's order of checks, answering its codes
 * (`bodyErrorCodes`). What the reference cleans rather than refuses is declared `lenient`.
 */

/**
 * A field the relay cleans rather than refuses (the reference's cleanText and cleanIdentifier): a value
 * of another shape is dropped, as if absent; the relay then cleans the rest (trim, length cuts).
 */
export function lenient<S extends z.ZodType>(schema: S) {
  // An absent field stays absent without a trial parse: a failed safeParse builds its issues and error,
  // and most lenient fields are absent from most events (a tenth of the relay's allocation per event).
  return z.preprocess(
    (value) => (value !== undefined && schema.safeParse(value).success ? value : undefined),
    schema.optional(),
  );
}

// eslint-disable-next-line no-control-regex -- the reference replaces exactly U+0000–U+001F
const CONTROL_CHARS = /[\u0000-\u001f]/g;

/** What the reference's cleanText leaves non-empty: text once control characters are spaces and it is trimmed. */
export function hasVisibleText(text: string): boolean {
  return text.replace(CONTROL_CHARS, ' ').trim() !== '';
}

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

/**
 * Answers the relay's HTTP server gives on every route before the route's own checks, closing the
 * connection after them: the request's headers or body did not arrive within RELAY_REQUEST_TIMEOUT_MS
 * (30 s), or its header block is over Node's 16 KB.
 */
export const beforeTheRoute = {
  408: {
    description: 'Headers or body not in within RELAY_REQUEST_TIMEOUT_MS; the connection is closed.',
    schema: errorOf(['request_timeout']),
  },
  431: { description: 'A header block over 16 KB; the connection is closed.', schema: errorOf(['headers_too_large']) },
} as const;

/**
 * Several replicas (REDIS_URL) only: Redis, where the replicas keep what they share (event ids, rate
 * windows, rings, where a Watch grant lives), did not answer within a second. Nothing was done; the
 * answer carries `Retry-After: 1`, and the same request succeeds once Redis answers again. One process
 * never answers it.
 */
export const SHARED_STATE_UNAVAILABLE = 'shared_state_unavailable';
export const sharedStateUnavailableDescription =
  'Several replicas only (REDIS_URL): the shared state (Redis) did not answer; nothing was done. Retry-After: 1.';
export const sharedStateUnavailable = {
  description: sharedStateUnavailableDescription,
  schema: errorOf([SHARED_STATE_UNAVAILABLE]),
};

/** A path id that does not match its pattern is an unknown route to the reference: 404 not_found. */
export const malformedId = { description: 'A path id of the wrong shape.', schema: errorOf(['not_found']) };

/** A body on a route that reads none is still bounded, in bytes, before the route runs. */
export const unreadBodyTooLarge = {
  description: 'A request body over 131,072 bytes (the route reads none); the connection is closed.',
  schema: errorOf(['payload_too_large']),
};

/**
 * A query parameter as the reference reads it (`searchParams.get`): the first of repeated values, so
 * `?wait=1&wait=2` is not refused.
 */
export function firstQueryValue<S extends z.ZodType>(schema: S) {
  return z.preprocess((value) => (Array.isArray(value) ? value[0] : value), schema);
}
