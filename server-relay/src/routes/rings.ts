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
/** Room for the token and the JSON around a maximal sealed session. */
const RING_SESSION_FRAMING_CHARS = 1024;

function tokenMatches(ring: Ring, token: string): boolean {
  const a = Buffer.from(ring.token);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Unknown ring and wrong token are the same 404, so a token cannot be probed. */
async function ringFor(context: RelayContext, ringId: string, token: string): Promise<Ring> {
  const ring = await context.rings.get(ringId);
  if (!ring || !tokenMatches(ring, token)) throw new WireError(404, 'unknown_ring');
  return ring;
}

export function ringRoutes(app: FastifyInstance, context: RelayContext): void {
  bindRoute(
    app,
    settleRing,
    async ({ params, request, readBody }) => {
      await limit(context, `ring-settle:${ipOf(context, request)}`, FIXED_LIMITS.ringSettlePerIp);
      const { token, by, outcome, start: sealedStart } = readBody();
      // The path accepts ids of 1–64 characters (0.10 clients); settling needs a 0.11 id of 22, and the
      // reference answers any other with the body's code, after the body.
      if (!RING_ID.test(params.ringId)) throw new WireError(400, 'invalid_settle');
      const ring = await ringFor(context, params.ringId, token);
      if (ring.settled) {
        throw new WireError(409, 'already_settled', {
          settled: { by: ring.settled.by, outcome: ring.settled.outcome },
        });
      }
      // A malformed start was dropped, not refused: the call still settles and the Watch starts it the old way.
      const start = by === 'watch' && outcome === 'answered' ? sealedStart : undefined;
      const settlement = { by, outcome, ...(start !== undefined ? { start } : {}) };
      // Replicas: another replica may have settled between the read above and this write; its wins.
      const inForce = await context.rings.settle(ring.id, settlement);
      if (inForce !== settlement) {
        if (!inForce) throw new WireError(404, 'unknown_ring');
        throw new WireError(409, 'already_settled', { settled: { by: inForce.by, outcome: inForce.outcome } });
      }
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
    },
    { readJson },
  );

  bindRoute(
    app,
    storeRingSession,
    async ({ params, readBody }) => {
      const { token, sealed } = readBody();
      const ring = await ringFor(context, params.ringId, token);
      if (ring.settled?.by !== 'watch' || ring.settled.outcome !== 'answered') {
        throw new WireError(409, 'not_answered_on_watch');
      }
      await context.ringSessions.put(ring.id, sealed);
      return { status: 200, body: { stored: true } };
    },
    // A sealed session may be 96 KB, far above the general 32,768-character body bound.
    { readJson: (request) => readJson(request, FIXED_LIMITS.maxRingSessionChars + RING_SESSION_FRAMING_CHARS) },
  );

  bindRoute(app, fetchRingSession, async ({ params, query, request, reply }) => {
    const match = /^Bearer\s+([A-Za-z0-9_-]{43})$/i.exec(request.headers.authorization ?? '');
    if (!match?.[1]) throw new WireError(401, 'unauthorized');
    const ring = await ringFor(context, params.ringId, match[1]);
    if (ring.settled?.by !== 'watch' || ring.settled.outcome !== 'answered') {
      throw new WireError(409, 'not_answered_on_watch');
    }
    const seconds = query.wait !== undefined && /^\d+$/.test(query.wait) ? Number(query.wait) : 0;
    const waitMs = Math.min(seconds * 1000, FIXED_LIMITS.maxRingSessionWaitMs);
    const abort = new AbortController();
    reply.raw.once('close', () => abort.abort());
    const sealed = await context.ringSessions.take(ring.id, waitMs, abort.signal);
    if (sealed === 'busy') throw new WireError(409, 'busy');
    if (sealed === null) return { status: 204, body: undefined };
    return { status: 200, body: { sealed } };
  });
}
