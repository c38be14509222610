import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { bindRoute, WireError } from '@conduit/contracts/server';
import { fetchRingSession, settleRing, storeRingSession } from '@conduit/contracts/relay/index';
import { stopPushFor } from '../domain/call-push.js';
import type { Ring } from '../ephemeral/rings.js';
import { FIXED_LIMITS } from '../limits.js';
import { ipOf, limit, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';
import { sendVoipPush } from '../delivery/voip-push.js';

const RING_ID = /^[A-Za-z0-9_-]{22}$/;
const RING_TOKEN = /^[A-Za-z0-9_-]{43}$/;
const START = /^[A-Za-z0-9_-]{1,1024}$/;
const SEALED = /^[A-Za-z0-9_-]{1,98304}$/;
/** Room for the token and the JSON around a maximal sealed session. */
const RING_SESSION_FRAMING_CHARS = 1024;

function tokenMatches(ring: Ring, token: string): boolean {
  const a = Buffer.from(ring.token);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Unknown ring and wrong token are the same 404, so a token cannot be probed. */
function ringFor(context: RelayContext, ringId: string, token: string): Ring {
  const ring = context.rings.get(ringId);
  if (!ring || !tokenMatches(ring, token)) throw new WireError(404, 'unknown_ring');
  return ring;
}

export function ringRoutes(app: FastifyInstance, context: RelayContext): void {
  bindRoute(app, settleRing, async ({ params, request }) => {
    limit(context, `ring-settle:${ipOf(context, request)}`, FIXED_LIMITS.ringSettlePerIp);
    const body = readJson(request);
    const { token, by, outcome } = body;
    if (
      !RING_ID.test(params.ringId) ||
      typeof token !== 'string' ||
      !RING_TOKEN.test(token) ||
      (by !== 'phone' && by !== 'watch') ||
      (outcome !== 'answered' && outcome !== 'declined')
    ) {
      throw new WireError(400, 'invalid_settle');
    }
    const ring = ringFor(context, params.ringId, token);
    if (ring.settled) {
      throw new WireError(409, 'already_settled', { settled: { by: ring.settled.by, outcome: ring.settled.outcome } });
    }
    // A malformed start is dropped, not refused: the call still settles and the Watch starts it the old way.
    const start =
      by === 'watch' && outcome === 'answered' && typeof body.start === 'string' && START.test(body.start)
        ? body.start
        : undefined;
    context.rings.settle(ring.id, { by, outcome, ...(start !== undefined ? { start } : {}) });
    const otherToken = by === 'phone' ? ring.watchToken : ring.phoneToken;
    const otherTopic = by === 'phone' ? context.config.apnsWatchTopic : context.config.apnsTopic;
    let notified = false;
    if (otherToken) {
      const push = stopPushFor(
        { id: ring.id, outcome, by, ...(start !== undefined ? { start } : {}) },
        otherTopic,
        context.now(),
      );
      // Not retried: the other device rings out on its own.
      await sendVoipPush(
        context,
        { installationId: ring.installationId, device: by === 'phone' ? 'watch' : 'phone', token: otherToken },
        push,
      );
      // The seed: `notified` says the other device has a PushKit token, so a stop push went to it,
      // not that APNs accepted it.
      notified = true;
    }
    return { status: 200, body: { settled: true, notified } };
  });

  bindRoute(app, storeRingSession, async ({ params, request }) => {
    // A sealed session may be 96 KB, far above the general 32,768-character body bound.
    const body = readJson(request, FIXED_LIMITS.maxRingSessionChars + RING_SESSION_FRAMING_CHARS);
    const { token, sealed } = body;
    if (typeof token !== 'string' || !RING_TOKEN.test(token) || typeof sealed !== 'string' || !SEALED.test(sealed)) {
      throw new WireError(400, 'invalid_session');
    }
    const ring = ringFor(context, params.ringId, token);
    if (ring.settled?.by !== 'watch' || ring.settled.outcome !== 'answered') {
      throw new WireError(409, 'not_answered_on_watch');
    }
    context.ringSessions.put(ring.id, sealed);
    return { status: 200, body: { stored: true } };
  });

  bindRoute(app, fetchRingSession, async ({ params, query, request, reply }) => {
    const match = /^Bearer\s+([A-Za-z0-9_-]{43})$/i.exec(request.headers.authorization ?? '');
    if (!match?.[1]) throw new WireError(401, 'unauthorized');
    const ring = ringFor(context, params.ringId, match[1]);
    if (ring.settled?.by !== 'watch' || ring.settled.outcome !== 'answered') {
      throw new WireError(409, 'not_answered_on_watch');
    }
    const seconds = query.wait !== undefined && /^\d+$/.test(query.wait) ? Number(query.wait) : 0;
    const waitMs = Math.min(seconds * 1000, FIXED_LIMITS.maxRingSessionWaitMs);
    const abort = new AbortController();
    reply.raw.once('close', () => abort.abort());
    const taken = context.ringSessions.take(ring.id, waitMs, abort.signal);
    if (taken === 'busy') throw new WireError(409, 'busy');
    const sealed = await taken;
    if (sealed === null) return { status: 204, body: undefined };
    return { status: 200, body: { sealed } };
  });
}
