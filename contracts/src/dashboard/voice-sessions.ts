import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Voice transcripts (ROUTES.md "Voice transcripts", the seed's voice transcripts, calls attached to
 * chats, tags and summaries): a Live Voice call saved as an ordinary session in the profile's Hermes
 * session store (`state.db`), Conduit's labels for its voice chats, and the resume summaries. Errors
 * are `{"detail"}` answers with the reference's texts.
 */

/** Session, call, chat and parent ids: `^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`, else 400 `<field> is missing or invalid`. */
export const VOICE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** The voice modes a saved call names; `model` of the call's end is this engine. */
export const voiceEngine = z.enum(['gemini-live', 'gpt-live', 'grok-live', 'classic']);

/** The bounds of these routes, as the reference enforces them. */
export const VOICE_LIMITS = {
  bodyMaxBytes: 1024 * 1024,
  turnsPerRequest: 500,
  maxIndex: 100_000,
  turnMaxChars: 16_000,
  titleMaxChars: 120,
  summaryMaxChars: 8000,
  /** Calls kept with one chat, and turns kept per such call. */
  chatCallsPerChat: 50,
  chatCallMaxTurns: 2000,
} as const;

export const voiceTurn = z.object({
  role: z.enum(['user', 'assistant']),
  /** Counts from 0 within the call, with no gaps; an index never changes content once sent. */
  index: z.int().min(0).max(VOICE_LIMITS.maxIndex),
  /** Non-empty (a turn is sent only once it is final); clipped to 16,000 characters. */
  text: z.string(),
  /** Unix seconds; a value that is not a time before the year 3000 is dropped (Hermes stamps the row). */
  at: z.number().optional(),
});

export const voiceSaveRequest = z.object({
  call_id: z.string(),
  engine: voiceEngine,
  /** At most 500 per request (413). */
  turns: z.array(voiceTurn),
  /** A new session's title; on a clash with another session's title the id's last 6 characters are appended. */
  title: z.string().optional(),
  /** Appends to this saved voice call; absent starts a session (or continues the one this call_id made). */
  session_id: z.string().optional(),
  /**
   * The chat this call is attached to (its stored session id), sent instead of session_id: the turns are
   * kept with the chat in state_meta, the chat's own messages are never touched, and no session is made.
   */
  chat_id: z.string().optional(),
});

export const voiceSaveResponse = z.object({
  ok: z.literal(true),
  /** The saved session; null when nothing was saved or the call is kept with a chat. */
  session_id: z.string().nullable(),
  /** One past the highest index stored for this call: where the next save starts. */
  written: z.int(),
  /** Turns this request stored. */
  appended: z.int(),
  /** Turns at or below the highest stored index: replays of a retried save. */
  skipped: z.int(),
  /** Whether this request made the session. */
  created: z.boolean(),
});

/** Answers every voice route shares (ROUTES.md, Voice transcripts, shared rules). */
const voiceErrors = {
  401: unauthorized,
  500: detailAnswer('An unexpected failure, named by its type only.'),
  501: detailAnswer(
    "This Hermes' session store lacks what the route needs (`This Hermes version can't store voice transcripts; update Hermes`).",
  ),
  503: detailUnavailable(
    'The profile cannot be resolved, or Hermes has not created its session store yet (nothing is written).',
  ),
};

const readLimit = detailAnswer(
  'More than 600 voice history reads a minute on this host (`Too many voice history reads; try again shortly`).',
);
const writeLimit = detailAnswer(
  'More than 120 voice history writes a minute on this host (`Too many voice history writes; try again shortly`).',
);
const busy = detailAnswer(
  'The session is being compacted (`The session is busy; try again shortly`); nothing is written.',
);

export const postVoiceSession = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/voice/sessions',
  operationId: 'postVoiceSession',
  summary: "Save a Live Voice call's turns into the profile's session history",
  description:
    'A new call becomes a session with source desktop and no model, ended with end_reason conduit_voice; later saves ' +
    "append to it. Turns already stored for the call are skipped, so a retried save stores only what did not land. Once new turns are stored, the call's end runs in the background.",
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: profileQuery,
  body: voiceSaveRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('What was stored.', voiceSaveResponse),
    ...detailBodyRefusals,
    400: detailAnswer(
      'The body is not a JSON object, a field is refused (its message), or the turns leave a gap ' +
        '(`Turns must continue from index N for this call`).',
    ),
    413: detailAnswer('The body is over 1 MiB, it carries more than 500 turns, or a chat call passes 2,000 turns.'),
    409: busy,
    422: detailAnswer(
      'The session is gone, is not a saved voice call, or was compacted; or the chat no longer exists. Conduit then ' +
        'saves the call as a new session.',
    ),
    429: writeLimit,
    ...voiceErrors,
    504: detailAnswer('The save took more than 20 seconds (`Voice save timed out`); it may still land.'),
  },
});

export const voiceChatCallsQuery = profileQuery.extend({
  chat_id: z.string().optional(),
  /** The one call whose turns are returned. */
  call_id: z.string().optional(),
});

export const voiceChatCallsResponse = z.object({
  ok: z.literal(true),
  chat_id: z.string(),
  /** The calls kept with the chat, oldest first (at most 50). */
  calls: z.array(z.object({ call_id: z.string(), engine: voiceEngine, turns: z.int() })),
  /** The turns of the call named by call_id, by index; empty without call_id or for a call not kept. */
  turns: z.array(voiceTurn),
});

export const getVoiceChatCalls = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/voice/chat-calls',
  operationId: 'getVoiceChatCalls',
  summary: 'The Live Voice calls kept with a chat',
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: voiceChatCallsQuery,
  responses: {
    200: noStoreAnswer("The chat's calls, and one call's turns.", voiceChatCallsResponse),
    400: detailAnswer('chat_id or call_id is missing or invalid.'),
    429: readLimit,
    ...voiceErrors,
    504: detailAnswer('The read took more than 20 seconds (`Voice chat calls timed out`).'),
  },
});

/** A voice label: `call` is set by the saves alone; Conduit sets `classic` and `job`. */
export const voiceTag = z.object({
  kind: z.enum(['call', 'classic', 'job']),
  engine: voiceEngine.optional(),
  parent_id: z.string().optional(),
  parent_title: z.string().optional(),
});

export const voiceTagsResponse = z.object({
  ok: z.literal(true),
  /** By session id, oldest first; at most 2,000. */
  tags: z.record(z.string(), voiceTag),
});

export const getVoiceTags = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/voice/tags',
  operationId: 'getVoiceTags',
  summary: "Conduit's labels for the profile's voice chats",
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The labels (empty when nothing is stored yet).', voiceTagsResponse),
    400: detailAnswer('A malformed query (`invalid_query`).'),
    429: readLimit,
    ...voiceErrors,
    504: detailAnswer('The read took more than 20 seconds (`Voice tags timed out`).'),
  },
});

export const voiceTagRequest = z.object({
  session_id: z.string(),
  kind: z.enum(['classic', 'job']),
  parent_id: z.string().optional(),
  /** At most 120 characters (clipped). */
  parent_title: z.string().optional(),
});

export const voiceTagResponse = z.object({
  ok: z.literal(true),
  session_id: z.string(),
  kind: z.enum(['classic', 'job']),
  parent_id: z.string().optional(),
  parent_title: z.string().optional(),
});

export const postVoiceTag = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/voice/tags',
  operationId: 'postVoiceTag',
  summary: 'Label a chat as a classic voice chat or a voice job',
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: profileQuery,
  body: voiceTagRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The label stored.', voiceTagResponse),
    ...detailBodyRefusals,
    422: detailAnswer(
      "The session is a saved voice call (`That session is a saved voice call; its tag can't change`).",
    ),
    429: writeLimit,
    ...voiceErrors,
    504: detailAnswer('The write took more than 20 seconds (`Voice tag timed out`).'),
  },
});

export const voiceSummaryQuery = profileQuery.extend({ session_id: z.string().optional() });

export const voiceSummaryResponse = z.object({
  ok: z.literal(true),
  available: z.boolean(),
  text: z.string(),
  /** How many of the call's turns the summary covers. */
  covers: z.int(),
});

export const getVoiceSummary = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/voice/summary',
  operationId: 'getVoiceSummary',
  summary: "A saved voice call's resume summary",
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: voiceSummaryQuery,
  responses: {
    200: noStoreAnswer('The summary, or available false with empty text.', voiceSummaryResponse),
    400: detailAnswer('session_id is missing or invalid.'),
    429: readLimit,
    ...voiceErrors,
    504: detailAnswer('The read took more than 20 seconds (`Voice summary timed out`).'),
  },
});

export const voiceSummaryRequest = z.object({
  session_id: z.string(),
  /** At most 8,000 characters (clipped). */
  text: z.string(),
  covers: z.int().min(0),
});

export const postVoiceSummary = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/voice/summary',
  operationId: 'postVoiceSummary',
  summary: "Store a saved voice call's resume summary",
  tags: ['voice-transcripts'],
  auth: 'bearer',
  query: profileQuery,
  body: voiceSummaryRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'The summary stored.',
      z.object({ ok: z.literal(true), session_id: z.string(), covers: z.int() }),
    ),
    ...detailBodyRefusals,
    400: detailAnswer('`A summary needs text and a non-negative covers count`, or session_id is missing or invalid.'),
    422: detailAnswer('The session is gone or is not a saved voice call.'),
    429: writeLimit,
    ...voiceErrors,
    504: detailAnswer('The write took more than 20 seconds (`Voice summary timed out`).'),
  },
});
