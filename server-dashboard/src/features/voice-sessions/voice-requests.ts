import { VOICE_ID_PATTERN, VOICE_LIMITS, voiceEngine } from '@conduit/contracts/dashboard/voice-sessions';
import type { z } from 'zod';
import { DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import { clipBlock, clipLine } from '../../kernel/voice-text.js';

/**
 * The voice routes' bodies, checked beside the concept and turned into clean values before anything
 * touches the store (ROUTES.md, Voice transcripts; messages as the reference answers them).
 */

export type VoiceEngine = z.output<typeof voiceEngine>;

/** One turn as it will be stored: its call index, Hermes' role, the clipped text, and its time if valid. */
export interface CleanTurn {
  index: number;
  role: 'user' | 'assistant';
  content: string;
  /** Unix seconds, or null when absent or not a time before the year 3000 (Hermes stamps those). */
  at: number | null;
}

export interface SaveRequest {
  callId: string;
  engine: VoiceEngine;
  /** Sorted by index; a repeated index stays, and the save skips the repeat. */
  turns: CleanTurn[];
  /** A new session's title ('' for none). */
  title: string;
  sessionId: string | null;
  chatId: string | null;
}

export interface TagRequest {
  sessionId: string;
  kind: 'classic' | 'job';
  parentId?: string;
  parentTitle?: string;
}

export interface SummaryRequest {
  sessionId: string;
  text: string;
  covers: number;
}

/** 32503680000: 3000-01-01T00:00:00Z in unix seconds. */
const YEAR_3000_S = 32_503_680_000;

/** The request body as a JSON object, or 400: every voice write takes an object. */
export function objectBody(raw: unknown): Record<string, unknown> {
  const body = readJsonBody(raw);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DetailError(400, 'Request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** A session, call, chat or parent id, trimmed; 400 `<field> is missing or invalid` otherwise. */
export function voiceId(value: unknown, field: string): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (!VOICE_ID_PATTERN.test(text)) throw new DetailError(400, `${field} is missing or invalid`);
  return text;
}

/** An id that may be left out: absent, null or '' is none; anything else must be a valid id. */
function optionalId(value: unknown, field: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  return voiceId(value, field);
}

/** Only strings: an object or a list is never stored as its text. */
function optionalLine(value: unknown, max: number): string {
  return typeof value === 'string' ? clipLine(value, max) : '';
}

function isWhole(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

function cleanTurns(raw: unknown): CleanTurn[] {
  if (!Array.isArray(raw)) throw new DetailError(400, 'turns must be a list');
  if (raw.length > VOICE_LIMITS.turnsPerRequest) {
    throw new DetailError(413, `At most ${VOICE_LIMITS.turnsPerRequest} turns per request`);
  }
  const turns = raw.map((item: unknown): CleanTurn => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new DetailError(400, 'Each turn must be an object');
    }
    const { role, index, text, at } = item as Record<string, unknown>;
    if ((role !== 'user' && role !== 'assistant') || !isWhole(index) || index < 0 || index > VOICE_LIMITS.maxIndex) {
      throw new DetailError(
        400,
        `Each turn needs a role (user or assistant) and an index from 0 to ${VOICE_LIMITS.maxIndex}`,
      );
    }
    if (text !== undefined && text !== null && typeof text !== 'string') {
      throw new DetailError(400, "A turn's text must be a string");
    }
    // A turn is final once sent: an empty one could only be a turn still being spoken, and an index
    // must never change content after it is stored.
    const content = (text ?? '').trim();
    if (!content) throw new DetailError(400, "Each turn needs text; send a turn only once it's final");
    const time = typeof at === 'number' && Number.isFinite(at) && at > 0 && at < YEAR_3000_S ? at : null;
    return { index, role, content: content.slice(0, VOICE_LIMITS.turnMaxChars), at: time };
  });
  return turns.sort((a, b) => a.index - b.index);
}

/** `POST /voice/sessions`: the call, its turns, and where they go (a session, a new one, or a chat). */
export function validSave(body: Record<string, unknown>): SaveRequest {
  const callId = voiceId(body.call_id, 'call_id');
  const engine = voiceEngine.safeParse(typeof body.engine === 'string' ? body.engine.trim() : undefined);
  if (!engine.success) throw new DetailError(400, 'engine is missing or invalid');
  const turns = cleanTurns(body.turns);
  const sessionId = optionalId(body.session_id, 'session_id');
  const chatId = optionalId(body.chat_id, 'chat_id');
  if (sessionId !== null && chatId !== null) {
    throw new DetailError(400, 'Send session_id or chat_id, not both');
  }
  return {
    callId,
    engine: engine.data,
    turns,
    title: optionalLine(body.title, VOICE_LIMITS.titleMaxChars),
    sessionId,
    chatId,
  };
}

/** `POST /voice/tags`: only the labels Conduit sets; `call` comes from a save alone. */
export function validTag(body: Record<string, unknown>): TagRequest {
  const sessionId = voiceId(body.session_id, 'session_id');
  const kind = body.kind;
  if (kind !== 'classic' && kind !== 'job') throw new DetailError(400, 'kind must be classic or job');
  const parentId = optionalId(body.parent_id, 'parent_id');
  const parentTitle = optionalLine(body.parent_title, VOICE_LIMITS.titleMaxChars);
  return {
    sessionId,
    kind,
    ...(parentId !== null ? { parentId } : {}),
    ...(parentTitle ? { parentTitle } : {}),
  };
}

/** `POST /voice/summary`: text (clipped to 8,000, line breaks kept) and a whole covers count ≥ 0. */
export function validSummary(body: Record<string, unknown>): SummaryRequest {
  const sessionId = voiceId(body.session_id, 'session_id');
  const text = typeof body.text === 'string' ? clipBlock(body.text.trim(), VOICE_LIMITS.summaryMaxChars) : '';
  const covers = body.covers;
  if (!text || !isWhole(covers) || covers < 0) {
    throw new DetailError(400, 'A summary needs text and a non-negative covers count');
  }
  return { sessionId, text, covers };
}
