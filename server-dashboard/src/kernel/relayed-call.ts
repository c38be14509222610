import type { FastifyInstance } from 'fastify';
import type WebSocket from 'ws';
import type { z } from 'zod';
import type { ProfileScope } from '../notifier/notifier.js';
import { DetailError } from './detail-errors.js';
import type { FeatureKernel } from './feature.js';
import { OpenCalls } from './open-calls.js';
import { profileForRoute } from './profile-files.js';
import { limiterKey, perMinute } from './rate-window.js';
import { closeSocket, RELAY_CLOSE, relaySocket, type RelayClose, type UpstreamFailures } from './socket-relay.js';
import { acceptUpgrade, socketRoute } from './socket-route.js';

/** Where one call goes: the provider's socket, its handshake headers (the credential), its failures. */
export interface RelayTarget {
  url: string;
  headers: Record<string, string>;
  failures: UpstreamFailures;
  /** Names the credential kind in the log (`subscription`, `api_key`, `none`); never its value. */
  credential: string;
}

export interface RelayedCallRoute<Query extends { profile?: string | undefined }> {
  /** The socket's path, under the plugin prefix. */
  path: string;
  /** Names the relay in log lines and in the host-failure reason (`Grok Live`). */
  name: string;
  /** The socket's query, beside the credential (`ticket`, `token`) the caller check reads. */
  query: z.ZodType<Query>;
  limits: {
    /** New calls a minute per profile (limiter key). */
    perProfilePerMinute: number;
    /** New calls a minute host-wide. */
    hostWidePerMinute: number;
    /** Calls open at once per profile. */
    openPerProfile: number;
    /** Calls open at once on this host. */
    openOverall: number;
    /** The reason a call over a per-minute limit closes with (4429). */
    tooManyConnections: string;
    /** The reason a call over an open-calls bound closes with (4429). */
    tooManyOpen: string;
  };
  connectTimeoutMs: number;
  clientFrameLimitBytes: number;
  upstreamFrameLimitBytes: number;
  idle?: { ms: number; close: RelayClose };
  /**
   * Told of each call once it is being relayed: what it returns reads the app's text frames first
   * (true keeps one on the host) and is told when the call ends.
   */
  attach?(call: { profile: ProfileScope; query: Query; socket: WebSocket }): CallAttachment;
  /** The profile's target, or the close that refuses the call (nothing configured: 4503). */
  target(profile: ProfileScope, query: Query): Promise<RelayTarget | RelayClose>;
}

/** A feature's hold on one relayed call (see RelayedCallRoute.attach). */
export interface CallAttachment {
  keepClientText(frame: Buffer): boolean;
  ended(): void;
}

function isTarget(value: RelayTarget | RelayClose): value is RelayTarget {
  return 'url' in value;
}

/**
 * A relayed-call socket route, the part Grok Live and the speech server share: once the caller check
 * of the scope has passed, the upgrade is accepted and every refusal is a close the app shows — a
 * query or profile that cannot be used (4400, never a fallback to the default profile), a limit
 * (4429), nothing to relay to (the feature's close), a host failure (4500) — and only then is the
 * provider dialled and the frames relayed.
 */
export function relayedCallRoute<Query extends { profile?: string | undefined }>(
  scope: FastifyInstance,
  kernel: FeatureKernel,
  route: RelayedCallRoute<Query>,
): void {
  const perProfile = perMinute(route.limits.perProfilePerMinute, kernel.clock);
  const hostWide = perMinute(route.limits.hostWidePerMinute, kernel.clock);
  const calls = new OpenCalls(route.limits.openPerProfile, route.limits.openOverall);
  scope.addHook('onClose', async () => calls.closeAll('The host is stopping'));

  socketRoute(scope, route.path, async (request, reply) => {
    const socket = await acceptUpgrade(request, reply);
    if (!socket) return;
    const refuse = (close: RelayClose): void => closeSocket(socket, close.code, close.reason);
    /** The slot of a call being dialled, given back if dialling itself throws. */
    let started: (() => void) | null = null;
    try {
      const query = route.query.safeParse(request.query);
      if (!query.success) return refuse({ code: RELAY_CLOSE.refused, reason: 'The socket query is not valid' });
      let profile: ProfileScope;
      try {
        profile = profileForRoute(kernel.hermesHome, query.data.profile);
      } catch (error) {
        if (error instanceof DetailError) return refuse({ code: RELAY_CLOSE.refused, reason: error.message });
        throw error;
      }
      const key = limiterKey(query.data.profile);
      if (!hostWide.tryTake('') || !perProfile.tryTake(key)) {
        return refuse({ code: RELAY_CLOSE.rateLimited, reason: route.limits.tooManyConnections });
      }
      const slot = calls.tryOpen(key, socket);
      if (!slot) return refuse({ code: RELAY_CLOSE.rateLimited, reason: route.limits.tooManyOpen });
      const done = kernel.activity.begin(route.name);
      const release = (): void => {
        slot();
        done();
      };
      let target: RelayTarget | RelayClose;
      try {
        target = await route.target(profile, query.data);
      } catch (error) {
        release();
        throw error;
      }
      if (!isTarget(target)) {
        release();
        return refuse(target);
      }
      kernel.log.info(`${route.name} call starting`, { profile: profile.name, credential: target.credential });
      const attachment = route.attach?.({ profile, query: query.data, socket });
      const end = (): void => {
        release();
        attachment?.ended();
      };
      started = end;
      relaySocket({
        client: socket,
        upstreamUrl: target.url,
        upstreamHeaders: target.headers,
        timers: kernel.timers,
        log: kernel.log,
        logName: route.name,
        logFields: { profile: profile.name },
        connectTimeoutMs: route.connectTimeoutMs,
        clientFrameLimitBytes: route.clientFrameLimitBytes,
        upstreamFrameLimitBytes: route.upstreamFrameLimitBytes,
        ...(route.idle ? { idleCloseMs: route.idle.ms, idleClose: route.idle.close } : {}),
        failures: target.failures,
        ...(attachment ? { keepClientText: (frame: Buffer) => attachment.keepClientText(frame) } : {}),
        onEnd: end,
      });
    } catch (error) {
      started?.();
      // The type only: a message may carry a path or upstream text.
      const type = error instanceof Error ? error.name : 'Error';
      kernel.log.error(`${route.name} socket failed`, { error: type });
      refuse({ code: RELAY_CLOSE.hostFailure, reason: `${route.name} socket failed on the host (${type})` });
    }
  });
}
