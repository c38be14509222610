import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { bindRoute } from '@conduit/contracts/server';
import {
  CALL_SETUP_ERRORS,
  CALL_SETUP_LIMITS,
  callOptions,
  callOptionsAlias,
  createCall,
  createCallAlias,
} from '@conduit/contracts/voice/calls';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { CallRegistry } from '../calls/call-registry.js';
import { RealtimeCall, type CallServices } from '../calls/realtime-call.js';
import type { VoiceConfig } from '../config.js';
import { preflightHeaders } from './cors.js';
import { decodeOfferBody, mediaType, readBoundedBody } from '../signalling/offer-body.js';
import { ProxyReplayGuard, verifyProxyIdentity } from '../signalling/proxy-identity.js';
import { SetupError } from '../signalling/setup-error.js';
import { setupSession } from '../signalling/setup-session.js';

export interface CallRoutesDeps {
  config: VoiceConfig;
  registry: CallRegistry;
  services: CallServices;
  /** Wall clock in ms (proxy timestamp skew, replay window). */
  nowMs: () => number;
}

/** Runs `work` under the setup deadline: past it the setup fails with 400 invalid WebRTC offer. */
function underDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new SetupError(400, CALL_SETUP_ERRORS.invalidOffer));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => (signal.removeEventListener('abort', onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener('abort', onAbort), reject(error)),
    );
  });
}

/**
 * POST /v1/realtime/calls (and the /realtime/calls alias), CONTRACT.md §1: bearer auth → capacity → body
 * under the 30 s setup deadline → proxy identity → session → offer/answer. Every failure after the slot
 * was reserved releases the slot and whatever part of the call already exists.
 */
export async function callRoutes(app: FastifyInstance, deps: CallRoutesDeps): Promise<void> {
  const { config, registry, services } = deps;
  const replayGuard = new ProxyReplayGuard(deps.nowMs);
  await app.register(async (scope) => {
    // The body is read by the handler, after auth and capacity, with its own limits and deadline, so no
    // parser may consume it first.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    for (const route of [createCall, createCallAlias]) {
      bindRoute(scope, route, async ({ request, reply }) => {
        if (!bearerMatches(request.headers.authorization, config.apiKey))
          return { status: 401, body: CALL_SETUP_ERRORS.unauthorized };
        const reservation = registry.reserve();
        if (!reservation) return { status: 429, body: CALL_SETUP_ERRORS.tooManyCalls };
        const controller = new AbortController();
        const deadline = setTimeout(() => controller.abort(), config.callSetupTimeoutMs);
        let call: RealtimeCall | null = null;
        try {
          const contentType = request.headers['content-type'];
          const type = mediaType(contentType);
          if (type !== 'application/sdp' && !type.startsWith('multipart/'))
            throw new SetupError(415, CALL_SETUP_ERRORS.unsupportedMediaType);
          const stream = request.body as Readable | undefined;
          const body = stream
            ? await readBoundedBody(stream, CALL_SETUP_LIMITS.bodyBytes, controller.signal)
            : Buffer.alloc(0);
          const offer = decodeOfferBody(contentType, body);
          const verdict = verifyProxyIdentity({
            headers: request.headers,
            signingKey: config.proxySigningKey,
            sdp: offer.sdp,
            sessionJson: offer.sessionJson,
            nowMs: deps.nowMs(),
            replayGuard,
          });
          if (verdict.kind === 'invalid') throw new SetupError(401, CALL_SETUP_ERRORS.invalidProxy);
          if (verdict.kind === 'replayed') throw new SetupError(409, CALL_SETUP_ERRORS.proxyReplay);
          const session = setupSession(offer.session);
          const id = `call_${randomUUID().replaceAll('-', '')}`;
          call = new RealtimeCall(id, verdict.identity, session, services, (closed) => registry.remove(closed.id));
          let answer: string;
          try {
            answer = await underDeadline(call.answer(offer.sdp, config.callSetupTimeoutMs), controller.signal);
          } catch {
            throw new SetupError(400, CALL_SETUP_ERRORS.invalidOffer);
          }
          // Past the deadline, or the peer already failed while answering: nothing usable to hand back.
          if (controller.signal.aborted || call.isClosing) throw new SetupError(400, CALL_SETUP_ERRORS.invalidOffer);
          reservation.commit(call);
          const live = call;
          const lifetime = setTimeout(() => void live.close('max call seconds'), config.maxCallSeconds * 1000);
          lifetime.unref();
          void live.closed.then(() => clearTimeout(lifetime));
          services.logger.info('call_started', { call_id: id, active_calls: registry.activeCount });
          return {
            status: 201,
            body: answer,
            headers: { location: `/v1/realtime/calls/${id}`, 'content-type': 'application/sdp' },
          };
        } catch (error) {
          reservation.release();
          if (call) void call.close('setup failed');
          if (error instanceof SetupError) {
            services.logger.info('call_setup_refused', { status: error.status });
            // A refused body may still be arriving: close the connection after answering instead of reading it.
            if (error.status === 413 || controller.signal.aborted) reply.header('connection', 'close');
            return { status: error.status, body: error.text };
          }
          throw error;
        } finally {
          clearTimeout(deadline);
        }
      });
    }

    for (const route of [callOptions, callOptionsAlias]) {
      bindRoute(scope, route, ({ request }) => ({ status: 204, body: undefined, headers: preflightHeaders(request) }));
    }
  });
}
