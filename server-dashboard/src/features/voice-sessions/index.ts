import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import {
  getVoiceChatCalls,
  getVoiceSummary,
  getVoiceTags,
  postVoiceSession,
  postVoiceSummary,
  postVoiceTag,
  VOICE_LIMITS,
} from '@conduit/contracts/dashboard/voice-sessions';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, DetailError } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { perMinute } from '../../kernel/rate-window.js';
import { CallEndQueue, type CallEndReport, type CallEndStep } from './call-ends.js';
import { hermesCallEndSteps } from './hermes-call-end.js';
import { hermesPython } from '../../kernel/hermes-python.js';
import {
  CompressionSessionBusyError,
  CompressionSessionClosedError,
  UnsupportedStoreError,
} from '../../kernel/hermes-state-writer.js';
import {
  MissingStoreError,
  STORE_CALL_BOUNDS,
  StoreCalls,
  VoiceTimedOut,
  type StoreCallBounds,
} from '../../kernel/hermes-state-calls.js';
import { objectBody, validSave, validSummary, validTag, voiceId } from './voice-requests.js';
import {
  chatCallsOf,
  saveChatCall,
  saveVoiceCall,
  saveVoiceSummary,
  saveVoiceTag,
  summaryOf,
  tagsOf,
  type Outcome,
} from './voice-save.js';

/** The bounds of this feature (ROUTES.md, Voice transcripts); the store's own are in kernel/hermes-state-calls.ts. */
const BOUNDS = {
  /**
   * For the whole host, whatever ?profile= says: counted before the profile is resolved or the body
   * read, so made-up profile names cannot mint fresh windows. Conduit writes about once a minute per
   * call plus a tag or summary; this only stops a runaway client from growing state.db without bound.
   */
  writesPerMinute: 120,
  readsPerMinute: 600,
  bodyLimitBytes: VOICE_LIMITS.bodyMaxBytes,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };
const UNSUPPORTED = "This Hermes version can't store voice transcripts; update Hermes";
const NO_STORE_YET = 'This Hermes profile has no session store yet; open Hermes in it once, then try again';

export interface VoiceSessionsOptions {
  /** Store timings (default STORE_CALL_BOUNDS: 20 s per request). */
  store?: Partial<StoreCallBounds>;
  /**
   * Hermes' steps of a saved call's end (call-ends.ts). By default Hermes' own code runs them on Hermes'
   * Python (hermes-call-end.ts); none when this machine has no Hermes Python.
   */
  callEndSteps?: readonly CallEndStep[];
  /** Told how each call's end finished. */
  onCallEnd?: (report: CallEndReport) => void;
  /** A new session id for `nowMs`; default Hermes' `%Y%m%d_%H%M%S_<12 hex>` in local time. */
  newSessionId?: (nowMs: number) => string;
  /** Jitter of the lock retries (default Math.random). */
  random?: () => number;
}

/** `hermes_state_ids.new_session_id()`'s format: local time, then 12 random hex digits. */
export function hermesSessionId(nowMs: number): string {
  const at = new Date(nowMs);
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${at.getFullYear()}${two(at.getMonth() + 1)}${two(at.getDate())}`;
  const time = `${two(at.getHours())}${two(at.getMinutes())}${two(at.getSeconds())}`;
  return `${date}_${time}_${randomBytes(6).toString('hex')}`;
}

/** Which request is which, for the 504 and 500 texts (`Voice save timed out`). */
function whatOf(request: FastifyRequest): string {
  const url = request.routeOptions.url ?? '';
  if (url.endsWith('/voice/sessions')) return 'save';
  if (url.endsWith('/voice/chat-calls')) return 'chat calls';
  if (url.endsWith('/voice/tags')) return request.method === 'GET' ? 'tags' : 'tag';
  return 'summary';
}

/** Hermes' errors and this feature's own, as the reference answers them. */
function knownFailure(error: Error): DetailError | undefined {
  if (error instanceof UnsupportedStoreError) return new DetailError(501, UNSUPPORTED);
  if (error instanceof MissingStoreError) return new DetailError(503, NO_STORE_YET);
  // A compaction in flight is transient (Conduit keeps the turns and retries); a row compaction closed
  // never takes appends again, so Conduit starts a new session.
  if (error instanceof CompressionSessionClosedError) {
    return new DetailError(422, 'That session was compacted; start a new one');
  }
  if (error instanceof CompressionSessionBusyError)
    return new DetailError(409, 'The session is busy; try again shortly');
  return undefined;
}

function settled<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw outcome.refusal;
  return outcome.value;
}

/**
 * Voice transcripts (`voice-sessions`, `voice-tags`, `voice-summary`): Live Voice calls saved as
 * sessions in the profile's Hermes session store, calls kept with a chat, Conduit's labels for voice
 * chats and the resume summaries. They never start the agent or call a model.
 */
export function createVoiceSessionsFeature(options: VoiceSessionsOptions = {}): HostFeature {
  return {
    name: 'voice-sessions',
    capabilities: [
      { name: 'voice-sessions', method: 'POST', path: postVoiceSession.path },
      { name: 'voice-tags', method: 'GET', path: getVoiceTags.path },
      { name: 'voice-summary', method: 'POST', path: postVoiceSummary.path },
    ],
    register(scope, kernel) {
      const writes = perMinute(BOUNDS.writesPerMinute, kernel.clock);
      const reads = perMinute(BOUNDS.readsPerMinute, kernel.clock);
      const store = new StoreCalls(kernel.timers, { ...STORE_CALL_BOUNDS, ...options.store }, options.random);
      const python = options.callEndSteps ? null : hermesPython(kernel.serviceEnv);
      const ends = new CallEndQueue({
        steps:
          options.callEndSteps ??
          (python
            ? hermesCallEndSteps(python, kernel.serviceEnv, (call, step, outcome) =>
                kernel.log.info('voice call end step', { profile: call.profile, step, outcome }),
              )
            : []),
        timers: kernel.timers,
        log: kernel.log,
        ...(options.onCallEnd ? { onReport: options.onCallEnd } : {}),
      });
      const newSessionId = options.newSessionId ?? hermesSessionId;

      answerWithDetail(scope, {
        bodyLimitBytes: BOUNDS.bodyLimitBytes,
        known: knownFailure,
        failure: (request, type) => `Voice ${whatOf(request)} failed on the host (${type})`,
      });
      scope.addHook('onRequest', async (request) => {
        // Before the body is read: a flood of large bodies costs nothing past the limit.
        const limit = request.method === 'GET' ? reads : writes;
        if (!limit.tryTake('')) {
          const kind = request.method === 'GET' ? 'reads' : 'writes';
          throw new DetailError(429, `Too many voice history ${kind}; try again shortly`);
        }
      });

      /** Runs a store call, turning the budget running out into `Voice <what> timed out`. */
      async function timed<T>(what: string, call: Promise<T>): Promise<T> {
        try {
          return await call;
        } catch (error) {
          if (error instanceof VoiceTimedOut) {
            kernel.log.warn('voice store call timed out', { what });
            throw new DetailError(504, `Voice ${what} timed out`);
          }
          throw error;
        }
      }
      const nowS = () => kernel.clock.now() / 1000;

      bindRoute(scope, postVoiceSession, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const request = validSave(objectBody(raw));
        const context = {
          nowS: nowS(),
          newSessionId: () => newSessionId(kernel.clock.now()),
          profile: profile.name,
          home: profile.home,
        };
        const chatId = request.chatId;
        const saved = settled(
          await timed(
            'save',
            chatId !== null
              ? store.write(profile.home, ['meta', 'sessions'], (db) =>
                  saveChatCall(db, { ...request, chatId }, context),
                )
              : store.write(profile.home, ['meta', 'sessions', 'messages'], (db) =>
                  saveVoiceCall(db, request, context),
                ),
          ),
        );
        if (saved.end) ends.enqueue(saved.end);
        return { status: 200, body: { ok: true as const, ...saved.answer }, headers: NO_STORE };
      });

      bindRoute(scope, getVoiceChatCalls, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const chatId = voiceId(query.chat_id, 'chat_id');
        const callId = query.call_id ? voiceId(query.call_id, 'call_id') : null;
        const calls = await timed(
          'chat calls',
          store.read(profile.home, ['meta'], (db) => chatCallsOf(db, chatId, callId)),
        );
        return { status: 200, body: { ok: true as const, ...calls }, headers: NO_STORE };
      });

      bindRoute(scope, getVoiceTags, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const tags = await timed('tags', store.read(profile.home, ['meta'], tagsOf));
        return { status: 200, body: { ok: true as const, tags }, headers: NO_STORE };
      });

      bindRoute(scope, postVoiceTag, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const request = validTag(objectBody(raw));
        const tag = settled(
          await timed(
            'tag',
            store.write(profile.home, ['meta', 'sessions'], (db) => saveVoiceTag(db, request)),
          ),
        );
        return {
          status: 200,
          body: { ok: true as const, session_id: request.sessionId, kind: request.kind, ...tagFields(tag) },
          headers: NO_STORE,
        };
      });

      bindRoute(scope, getVoiceSummary, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const sessionId = voiceId(query.session_id, 'session_id');
        const summary = await timed(
          'summary',
          store.read(profile.home, ['meta'], (db) => summaryOf(db, sessionId)),
        );
        return { status: 200, body: { ok: true as const, ...summary }, headers: NO_STORE };
      });

      bindRoute(scope, postVoiceSummary, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const request = validSummary(objectBody(raw));
        settled(
          await timed(
            'summary',
            store.write(profile.home, ['meta', 'sessions'], (db) => saveVoiceSummary(db, request)),
          ),
        );
        return {
          status: 200,
          body: { ok: true as const, session_id: request.sessionId, covers: request.covers },
          headers: NO_STORE,
        };
      });
    },
  };
}

function tagFields(tag: { parent_id?: string; parent_title?: string }) {
  return {
    ...(tag.parent_id !== undefined ? { parent_id: tag.parent_id } : {}),
    ...(tag.parent_title !== undefined ? { parent_title: tag.parent_title } : {}),
  };
}

/** The feature as the host registers it: Hermes' timings, its call-end steps on Hermes' Python. */
export const voiceSessionsFeature: HostFeature = createVoiceSessionsFeature();
