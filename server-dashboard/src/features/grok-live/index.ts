import { getGrokLiveStatus, grokLiveSocket } from '@conduit/contracts/dashboard/grok-live';
import { relayedSocketQuery } from '@conduit/contracts/dashboard/relayed-socket';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import { perMinute } from '../../kernel/rate-window.js';
import { relayedCallRoute } from '../../kernel/relayed-call.js';
import { RELAY_CLOSE, type UpstreamFailures } from '../../kernel/socket-relay.js';
import { grokSettings, XAI_REALTIME_ORIGIN } from '../../kernel/grok-live/grok-settings.js';
import { xaiCredential, type XaiAuth } from '../../kernel/grok-live/xai-credentials.js';

/** The bounds of this feature (ROUTES.md, Grok Live). */
const BOUNDS = {
  /** The app checks status when the Grok screen opens; 30 a minute host-wide covers that, not a loop. */
  statusChecksPerMinute: 30,
  /** Reading the profile's files and auth.json; past it the app is told the status timed out. */
  statusTimeoutMs: 25_000,
  /** A reconnecting app opens a few sockets a minute; ten per profile is a loop. */
  connectsPerProfilePerMinute: 10,
  connectsHostWidePerMinute: 30,
  /** Each open call is a billed xAI session: three per profile, eight on the host. */
  openPerProfile: 3,
  openOverall: 8,
  /** xAI must answer the handshake within this. */
  connectTimeoutMs: 15_000,
  /** An audio chunk is a few KiB; a larger frame from the app is a bug or abuse. */
  clientFrameLimitBytes: 256 * 1024,
  /** xAI's frames (audio deltas, transcripts) stay far below this. */
  upstreamFrameLimitBytes: 16 * 1024 * 1024,
} as const;

const NO_CREDENTIAL =
  'Grok Live needs a SuperGrok sign-in (hermes auth add xai-oauth) or XAI_API_KEY on the Hermes host';

/** How xAI's failures read to the Conduit app (ROUTES.md, Grok Live close codes). */
function xaiFailures(auth: XaiAuth): UpstreamFailures {
  const credential = auth === 'subscription' ? 'the SuperGrok sign-in' : 'the XAI_API_KEY';
  return {
    unreachable: 'Could not reach xAI',
    lost: 'The connection to xAI was lost',
    refused(status) {
      if (status === 401 || status === 403)
        return { code: RELAY_CLOSE.refused, reason: `xAI refused ${credential} (HTTP ${status})` };
      if (status === 429)
        return { code: RELAY_CLOSE.rateLimited, reason: `xAI is limiting this account (HTTP ${status})` };
      return { code: RELAY_CLOSE.unreachable, reason: 'Could not reach xAI' };
    },
    closed(code, reason) {
      // xAI's own codes (3000–4999) say why it ended the call; the app shows them as a refusal.
      if (code >= 3000 && code <= 4999)
        return { code: RELAY_CLOSE.refused, reason: `xAI closed the call (${code}): ${reason}` };
      if (code === 1000) return { code: 1000, reason };
      return { code: RELAY_CLOSE.unreachable, reason: 'The connection to xAI was lost' };
    },
  };
}

/**
 * Grok Live (`grok-live`): Conduit reaches xAI's realtime voice through a socket on this host, which
 * opens xAI's socket with the host's credential and relays the frames both ways, so the SuperGrok
 * sign-in and XAI_API_KEY never leave the host.
 */
export const grokLiveFeature: HostFeature = {
  name: 'grok-live',
  capabilities: [{ name: 'grok-live', method: 'GET', path: getGrokLiveStatus.path }],
  register(scope, kernel) {
    const statusChecks = perMinute(BOUNDS.statusChecksPerMinute, kernel.clock);
    answerWithDetail(scope, {
      bodyLimitBytes: 16 * 1024,
      failure: (_request, type) => `Grok Live status failed on the host (${type})`,
    });

    bindRoute(scope, getGrokLiveStatus, async ({ query }) => {
      if (!statusChecks.tryTake('')) throw new DetailError(429, 'Too many Grok Live status checks; try again shortly');
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const status = await withDeadline(
        (async () => {
          const files = await readProfileFiles(profile, kernel.serviceEnv);
          const credential = await xaiCredential(kernel.hermesHome, profile, files, kernel.clock.now());
          return { ...grokSettings(files), credential };
        })(),
        BOUNDS.statusTimeoutMs,
        kernel.timers,
        () => new DetailError(504, 'Grok Live status timed out'),
      );
      return {
        status: 200,
        body: {
          ok: true as const,
          model: status.model,
          voice: status.voice,
          transport: 'relay' as const,
          available: status.credential !== null,
          auth: status.credential?.auth ?? null,
          reason: status.credential ? null : NO_CREDENTIAL,
        },
        headers: { 'Cache-Control': 'no-store' },
      };
    });

    relayedCallRoute(scope, kernel, {
      path: grokLiveSocket.path,
      name: 'Grok Live',
      query: relayedSocketQuery,
      limits: {
        perProfilePerMinute: BOUNDS.connectsPerProfilePerMinute,
        hostWidePerMinute: BOUNDS.connectsHostWidePerMinute,
        openPerProfile: BOUNDS.openPerProfile,
        openOverall: BOUNDS.openOverall,
        tooManyConnections: 'Too many Grok Live connections; try again shortly',
        tooManyOpen: 'Too many Grok Live calls are open on this host',
      },
      connectTimeoutMs: BOUNDS.connectTimeoutMs,
      clientFrameLimitBytes: BOUNDS.clientFrameLimitBytes,
      upstreamFrameLimitBytes: BOUNDS.upstreamFrameLimitBytes,
      async target(profile) {
        const files = await readProfileFiles(profile, kernel.serviceEnv);
        const credential = await xaiCredential(kernel.hermesHome, profile, files, kernel.clock.now());
        if (!credential) return { code: RELAY_CLOSE.notConfigured, reason: NO_CREDENTIAL };
        const url = new URL('/v1/realtime', kernel.upstreams.xai ?? XAI_REALTIME_ORIGIN);
        url.searchParams.set('model', grokSettings(files).model);
        return {
          url: url.href,
          headers: { Authorization: `Bearer ${credential.bearer}` },
          failures: xaiFailures(credential.auth),
          credential: credential.auth,
        };
      },
    });
  },
};
