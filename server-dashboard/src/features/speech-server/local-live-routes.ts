import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  getLocalLiveStatus,
  LOCAL_LIVE_MODEL_PATH,
  postLocalLiveChatCompletions,
  postLocalLiveResponses,
  rotateLocalLiveKey,
} from '@conduit/contracts/dashboard/local-live';
import { bindRoute, WireError } from '@conduit/contracts/server';
import { bearerToken } from '@conduit/contracts/server/secrets';
import { DetailError, NO_STORE } from '../../kernel/detail-errors.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { chatCompletionFormat, responsesFormat, type CompletionFormat } from './local-live-answers.js';
import type { LocalLiveCalls, TurnEnd } from './local-live-calls.js';
import { profileOfKey, type LocalLiveKeys } from './local-live-key.js';

/** What the model routes answer with no Local Live call open, so the speech server's warmup succeeds. */
export const WARMUP_LINE = 'Local Live is ready. Start a call in Conduit to talk to Hermes.';

/** Bodies carry the speech server's whole chat history (images and audio parts included). */
const MODEL_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

/** One host's Local Live state, shared by the socket, the status routes and the model routes. */
export interface LocalLive {
  keys: LocalLiveKeys;
  calls: LocalLiveCalls;
}

/**
 * The dashboard's address as this request reached it, plus the model path: the Host this service was
 * called by (the request guard has already refused names it is not known by) and https when the
 * connection was TLS or a TLS proxy in front says so (`X-Forwarded-Proto: https`). The phone reads
 * it through the same front the speech server must reach, so the address is the one to copy.
 */
export function modelAddress(request: FastifyRequest): string {
  const encrypted = 'encrypted' in request.raw.socket && request.raw.socket.encrypted === true;
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim()
    .toLowerCase();
  const scheme = encrypted || forwarded === 'https' ? 'https' : 'http';
  return `${scheme}://${request.headers.host ?? 'localhost'}${LOCAL_LIVE_MODEL_PATH}`;
}

/** `GET /local-live/status` and `POST /local-live/key`, behind the dashboard sign-in like every plugin route. */
export function localLiveStatusRoutes(
  scope: FastifyInstance,
  kernel: FeatureKernel,
  live: LocalLive,
  speechServerSet: (profile: ProfileScope) => Promise<boolean>,
): void {
  bindRoute(scope, getLocalLiveStatus, async ({ query, request }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    const available = kernel.tokenRoutesRefusal === null;
    const key = available ? await live.keys.current(profile) : null;
    return {
      status: 200,
      body: {
        ok: true as const,
        available,
        reason: kernel.tokenRoutesRefusal,
        profile: profile.name,
        model_address: modelAddress(request),
        key,
        speech_server: await speechServerSet(profile),
      },
      headers: NO_STORE,
    };
  });

  bindRoute(scope, rotateLocalLiveKey, async ({ query }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    if (kernel.tokenRoutesRefusal !== null) throw new DetailError(503, kernel.tokenRoutesRefusal);
    const key = await live.keys.rotate(profile);
    kernel.log.info('Local Live key rotated', { profile: profile.name });
    return { status: 200, body: { ok: true as const, profile: profile.name, key }, headers: NO_STORE };
  });
}

/** OpenAI's error body, which the speech server's OpenAI client reads and logs. */
function openAiError(message: string, type: string, code: string | null) {
  return { error: { message, type, code } };
}

/**
 * The model routes: their own scope, outside the dashboard sign-in, whose one caller check is the
 * profile's Local Live key. The key names its profile; it is checked against that profile's current
 * key only, in constant time, and no other route of this host accepts it.
 */
export function localLiveModelRoutes(scope: FastifyInstance, kernel: FeatureKernel, live: LocalLive): void {
  const keyProfiles = new WeakMap<FastifyRequest, ProfileScope>();

  scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const refuse = (status: 401 | 503, body: ReturnType<typeof openAiError>) =>
      reply.status(status).header('cache-control', 'no-store').header('connection', 'close').send(body);
    if (kernel.tokenRoutesRefusal !== null)
      return refuse(503, openAiError(kernel.tokenRoutesRefusal, 'server_error', 'local_live_unavailable'));
    const presented = bearerToken(request.headers.authorization);
    const named = presented === null ? null : profileOfKey(presented);
    let profile: ProfileScope | null = null;
    if (named !== null) {
      try {
        profile = profileForRoute(kernel.hermesHome, named);
      } catch {
        profile = null;
      }
    }
    if (presented === null || profile === null || !(await live.keys.accepts(profile, presented))) {
      // Never says which part failed: a malformed key, an unknown profile and a rotated key read the same.
      return refuse(401, openAiError('Invalid Local Live key', 'invalid_request_error', 'invalid_api_key'));
    }
    keyProfiles.set(request, profile);
    return undefined;
  });

  scope.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
    reply.header('cache-control', 'no-store');
    if (error instanceof WireError)
      return reply.status(400).send(openAiError('The request body is not valid', 'invalid_request_error', error.code));
    if (error.statusCode === 413 || error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return reply.status(413).send(openAiError('Request body is too large', 'invalid_request_error', null));
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500)
      return reply.status(400).send(openAiError('The request body is not JSON', 'invalid_request_error', null));
    kernel.log.error('Local Live model route failed', { error: error.name || 'Error' });
    return reply
      .status(500)
      .send(openAiError(`Local Live failed on the host (${error.name || 'Error'})`, 'server_error', null));
  });

  const profileOf = (request: FastifyRequest): ProfileScope => {
    const profile = keyProfiles.get(request);
    // The hook above sets it for every request that reaches a handler; this is the type's guarantee.
    if (!profile) throw new Error('Local Live request without a checked key');
    return profile;
  };

  // JSON only, as OpenAI's clients send it, up to this scope's own bound (the host's is 1 MiB).
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: MODEL_BODY_LIMIT_BYTES },
    scope.getDefaultJsonParser('error', 'error'),
  );

  bindRoute(scope, postLocalLiveChatCompletions, async ({ readBody, request, reply }) => {
    const format = chatCompletionFormat(readBody(), kernel.clock.now());
    return answerTurn(live, profileOf(request), format, reply);
  });
  bindRoute(scope, postLocalLiveResponses, async ({ readBody, request, reply }) => {
    const format = responsesFormat(readBody(), kernel.clock.now());
    return answerTurn(live, profileOf(request), format, reply);
  });
}

const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  // A buffering proxy in front would hold the sentences back until the turn ends.
  'X-Accel-Buffering': 'no',
};

type TurnAnswer<Body> =
  | { status: 200; body: Body | PassThrough; headers: Record<string, string> }
  | { status: 400; body: ReturnType<typeof openAiError> };

/**
 * Answers one model request: a sentence Classic voice sent on a speak socket is read back unchanged;
 * with no Local Live call open the warmup line answers; otherwise the newest user message is the
 * turn the app answers through Hermes, written back as it arrives.
 */
async function answerTurn<Body>(
  live: LocalLive,
  profile: ProfileScope,
  format: CompletionFormat<Body>,
  reply: FastifyReply,
): Promise<TurnAnswer<Body>> {
  const text = format.userText();
  if (text === null || text.trim() === '') {
    return {
      status: 400,
      body: openAiError('The request has no user message', 'invalid_request_error', 'no_user_message'),
    };
  }
  const fixed = live.calls.takeSpoken(profile.name, text)
    ? text
    : live.calls.hasCall(profile.name)
      ? null
      : WARMUP_LINE;
  if (fixed !== null) {
    if (!format.streamed) return { status: 200, body: format.whole(fixed), headers: { 'Cache-Control': 'no-store' } };
    const stream = new PassThrough();
    stream.end(format.opening() + format.delta(fixed) + format.closing(fixed));
    return { status: 200, body: stream, headers: EVENT_STREAM_HEADERS };
  }

  let answered = '';
  let ended!: (how: TurnEnd) => void;
  const end = new Promise<TurnEnd>((resolve) => (ended = resolve));
  const stream = format.streamed ? new PassThrough() : null;
  stream?.write(format.opening());
  const turn = live.calls.startTurn(profile.name, text, {
    delta(piece) {
      answered += piece;
      stream?.write(format.delta(piece));
    },
    end(how) {
      // However the turn ended, the answer ends cleanly with what arrived: the speaker says that much.
      stream?.end(format.closing(answered));
      ended(how);
    },
  });
  if (!turn) {
    // The call closed between the check and the send: the warmup line, as with no call.
    stream?.end(format.delta(WARMUP_LINE) + format.closing(WARMUP_LINE));
    if (stream) return { status: 200, body: stream, headers: EVENT_STREAM_HEADERS };
    return { status: 200, body: format.whole(WARMUP_LINE), headers: { 'Cache-Control': 'no-store' } };
  }
  // The speech server closing the request is it no longer listening (the user talked over the reply).
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) turn.abandon();
  });
  if (stream) return { status: 200, body: stream, headers: EVENT_STREAM_HEADERS };
  await end;
  return { status: 200, body: format.whole(answered), headers: { 'Cache-Control': 'no-store' } };
}
