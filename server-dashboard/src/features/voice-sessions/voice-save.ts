import { DetailError } from '../../kernel/detail-errors.js';
import type { CallEnd, CallEndTurn } from './call-ends.js';
import type { HermesStateDb, MessageInsert } from '../../kernel/hermes-state-writer.js';
import { dropVoiceMeta, readCreated, readTags, setTag, type VoiceTag } from '../../kernel/voice-tags.js';
import {
  META_BOUNDS,
  dropChatCalls,
  readCalls,
  readChatCalls,
  readSummary,
  recordCall,
  rememberCreated,
  writeChatCall,
  writeSummary,
  type ChatCall,
} from './voice-meta.js';
import type { CleanTurn, SaveRequest, SummaryRequest, TagRequest } from './voice-requests.js';

/**
 * What the voice routes do inside one store transaction (ROUTES.md, Voice transcripts; the seed's
 * rules for saved calls). Each function runs in `BEGIN IMMEDIATE`, so a save lands whole or not at
 * all: the turns, the session's message_count, the call record and the tags commit together, and a
 * retried save can neither lose nor repeat a line.
 */

/** Saved rows keep Hermes' platform for a Conduit chat: typing into one then behaves like any Conduit chat. */
export const VOICE_SESSION_SOURCE = 'desktop';
/** The end_reason of a saved call: a saved call is never a live chat. */
export const VOICE_END_REASON = 'conduit_voice';

export const SAVE_REFUSALS = {
  gone: 'That voice session no longer exists; start a new one',
  notVoice: "That session isn't a saved voice call; start a new one",
  chatGone: 'That chat no longer exists; save the call on its own',
  taggedCall: "That session is a saved voice call; its tag can't change",
} as const;

export interface SaveAnswer {
  session_id: string | null;
  written: number;
  appended: number;
  skipped: number;
  created: boolean;
}

/**
 * A transaction's result: a value, or a refusal answered after the transaction commits. A refusal
 * carries cleanup that must land (a gone row's records are cleared, then 422 is answered).
 */
export type Outcome<T> = { ok: true; value: T } | { ok: false; refusal: DetailError };

export interface SaveContext {
  /** Unix seconds now, on the service's clock. */
  nowS: number;
  /** A new session id (`hermes_state_ids.new_session_id()`'s format). */
  newSessionId: () => string;
  profile: string;
  /** The profile's Hermes home (where its call's end runs). */
  home: string;
}

export interface SaveResult {
  answer: SaveAnswer;
  /** The call's end to run in the background, when this save stored new turns. */
  end: CallEnd | null;
}

/**
 * Splits a call's turns against the highest index already stored (`last`, -1 for none). A call's
 * indices run from 0 with no gaps and a row is append-only, so every index up to `last` is stored and
 * is a replay of a retried save (skipped); new turns must continue at `last + 1`. A gap is refused
 * rather than stored out of order or lost.
 */
function freshTurns(turns: readonly CleanTurn[], last: number): { fresh: CleanTurn[]; last: number } {
  const fresh: CleanTurn[] = [];
  let highest = last;
  for (const turn of turns) {
    if (turn.index <= highest) continue;
    if (turn.index !== highest + 1) {
      throw new DetailError(400, `Turns must continue from index ${highest + 1} for this call`);
    }
    fresh.push(turn);
    highest = turn.index;
  }
  return { fresh, last: highest };
}

/**
 * The rows Hermes would write for these turns: a turn without a time gets now, and each row is at
 * least a microsecond after the one before, as Hermes' batch writer keeps a transcript ordered.
 */
function messageRows(turns: readonly CleanTurn[], nowS: number): MessageInsert[] {
  let floor = nowS;
  return turns.map((turn) => {
    const timestamp = turn.at ?? floor;
    floor = Math.max(floor, timestamp) + 1e-6;
    return { role: turn.role, content: turn.content, timestamp };
  });
}

function endTurns(turns: readonly CleanTurn[]): CallEndTurn[] {
  return turns.map((turn) => ({ role: turn.role, text: turn.content }));
}

/** Appends go only to a row a save made, never to an ordinary chat (nor a classic voice chat, a real agent chat). */
function isVoiceRow(db: HermesStateDb, sessionId: string, endReason: string | null): boolean {
  return endReason === VOICE_END_REASON || readTags(db).get(sessionId)?.kind === 'call';
}

/** `POST /voice/sessions` without chat_id: a new voice-call session, or more turns for one. */
export function saveVoiceCall(db: HermesStateDb, request: SaveRequest, context: SaveContext): Outcome<SaveResult> {
  const { callId, engine, turns } = request;
  let sessionId = request.sessionId;
  let title: string | null = null;
  let adopted = false;
  if (sessionId !== null) {
    const row = db.getSession(sessionId);
    if (!row) {
      dropVoiceMeta(db, sessionId);
      return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.gone) };
    }
    if (!isVoiceRow(db, sessionId, row.end_reason)) {
      return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.notVoice) };
    }
    title = row.title;
  } else {
    // A create is idempotent per call_id: a retried first save whose answer was lost continues the row
    // it made instead of starting a second one.
    const earlier = readCreated(db).get(callId);
    const row = earlier !== undefined ? db.getSession(earlier) : null;
    if (earlier !== undefined && row) {
      sessionId = earlier;
      title = row.title;
      adopted = true;
    } else if (earlier !== undefined) {
      dropVoiceMeta(db, earlier);
    }
  }

  let created = false;
  if (sessionId === null) {
    if (turns.length === 0) {
      return { ok: true, value: { answer: nothingSaved(), end: null } };
    }
    freshTurns(turns, -1);
    sessionId = context.newSessionId();
    db.ensureSession(sessionId, VOICE_SESSION_SOURCE, context.nowS);
    created = true;
    rememberCreated(db, callId, sessionId);
    if (request.title) {
      // Titles are unique per profile: a clash gets the id's last six characters, and a second clash
      // leaves the row untitled rather than failing the save.
      const titled = [request.title, `${request.title} (${sessionId.slice(-6)})`].find((candidate) =>
        db.setTitle(sessionId as string, candidate),
      );
      title = titled ?? null;
    }
  }

  const { fresh, last } = freshTurns(turns, readCalls(db, sessionId).get(callId) ?? -1);
  if (fresh.length > 0) {
    db.appendMessages(sessionId, messageRows(fresh, context.nowS), context.nowS);
    recordCall(db, sessionId, callId, last);
  }
  if (created || adopted || fresh.length > 0) {
    // The first end wins, so later saves of the call change nothing; Hermes refuses appends only to rows
    // compaction closed, so this end does not block them.
    db.endSession(sessionId, VOICE_END_REASON, context.nowS);
  }
  if (created || (adopted && readTags(db).get(sessionId)?.kind !== 'call')) {
    // An adopted row whose first save died before tagging it is finished here.
    setTag(db, sessionId, { kind: 'call', engine });
  }
  const answer: SaveAnswer = {
    session_id: sessionId,
    written: last + 1,
    appended: fresh.length,
    skipped: turns.length - fresh.length,
    created,
  };
  const end: CallEnd | null =
    fresh.length > 0
      ? {
          kind: 'session',
          profile: context.profile,
          home: context.home,
          sessionId,
          title,
          engine,
          turns: endTurns(fresh),
        }
      : null;
  return { ok: true, value: { answer, end } };
}

function nothingSaved(): SaveAnswer {
  return { session_id: null, written: 0, appended: 0, skipped: 0, created: false };
}

/**
 * `POST /voice/sessions` with chat_id: the turns are kept with the chat in state_meta under the same
 * index rules, and the chat's own messages are never touched. No session is made.
 */
export function saveChatCall(
  db: HermesStateDb,
  request: SaveRequest & { chatId: string },
  context: SaveContext,
): Outcome<SaveResult> {
  const { chatId, callId, engine, turns } = request;
  const chat = db.getSession(chatId);
  if (!chat) {
    dropChatCalls(db, chatId);
    return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.chatGone) };
  }
  const calls = readChatCalls(db, chatId);
  const kept = calls.get(callId);
  const { fresh, last } = freshTurns(turns, (kept?.turns.length ?? 0) - 1);
  if (last >= META_BOUNDS.chatCallTurns) {
    throw new DetailError(413, `A call kept with a chat holds at most ${META_BOUNDS.chatCallTurns} turns`);
  }
  if (fresh.length > 0) {
    const call: ChatCall = {
      engine: kept?.engine ?? engine,
      turns: [
        ...(kept?.turns ?? []),
        ...fresh.map((turn) => ({ role: turn.role, text: turn.content, ...(turn.at !== null ? { at: turn.at } : {}) })),
      ],
    };
    if (JSON.stringify(call).length > META_BOUNDS.chatCallsMaxChars) {
      throw new DetailError(413, 'This call is too long to keep with the chat');
    }
    writeChatCall(db, chatId, callId, call);
  }
  const answer: SaveAnswer = {
    session_id: null,
    written: last + 1,
    appended: fresh.length,
    skipped: turns.length - fresh.length,
    created: false,
  };
  const end: CallEnd | null =
    fresh.length > 0
      ? {
          kind: 'chat',
          profile: context.profile,
          home: context.home,
          sessionId: chatId,
          title: chat.title,
          engine,
          turns: endTurns(fresh),
        }
      : null;
  return { ok: true, value: { answer, end } };
}

/** `GET /voice/chat-calls`: the calls kept with a chat, and the turns of the one named. */
export function chatCallsOf(db: HermesStateDb | null, chatId: string, callId: string | null) {
  const calls = db ? readChatCalls(db, chatId) : new Map<string, ChatCall>();
  const named = callId !== null ? calls.get(callId) : undefined;
  return {
    chat_id: chatId,
    calls: [...calls].map(([id, call]) => ({ call_id: id, engine: call.engine, turns: call.turns.length })),
    turns: (named?.turns ?? []).map((turn, index) => ({ index, ...turn })),
  };
}

/** `POST /voice/tags`: a classic voice chat or a voice job; a saved call's own label never changes. */
export function saveVoiceTag(db: HermesStateDb, request: TagRequest): Outcome<VoiceTag> {
  if (readTags(db).get(request.sessionId)?.kind === 'call') {
    return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.taggedCall) };
  }
  const tag: VoiceTag = {
    kind: request.kind,
    ...(request.parentId !== undefined ? { parent_id: request.parentId } : {}),
    ...(request.parentTitle !== undefined ? { parent_title: request.parentTitle } : {}),
  };
  setTag(db, request.sessionId, tag);
  return { ok: true, value: tag };
}

/** `POST /voice/summary`: only for rows saved as voice calls; a gone row's records are cleared. */
export function saveVoiceSummary(db: HermesStateDb, request: SummaryRequest): Outcome<null> {
  const row = db.getSession(request.sessionId);
  if (!row) {
    dropVoiceMeta(db, request.sessionId);
    return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.gone) };
  }
  if (!isVoiceRow(db, request.sessionId, row.end_reason)) {
    return { ok: false, refusal: new DetailError(422, SAVE_REFUSALS.notVoice) };
  }
  writeSummary(db, request.sessionId, request.text, request.covers);
  return { ok: true, value: null };
}

/** `GET /voice/summary`: available only with stored text. */
export function summaryOf(db: HermesStateDb | null, sessionId: string) {
  const { text, covers } = db ? readSummary(db, sessionId) : { text: '', covers: 0 };
  return { available: text !== '', text, covers };
}

/** `GET /voice/tags` (empty before anything is stored). */
export function tagsOf(db: HermesStateDb | null): Record<string, VoiceTag> {
  return db ? Object.fromEntries(readTags(db)) : {};
}
