import { getLocalLiveStatus } from '@conduit/contracts/dashboard/local-live';
import { localLiveSocket, localLiveSocketQuery } from '@conduit/contracts/dashboard/speech-server';
import { answerWithDetail } from '../../kernel/detail-errors.js';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { configSection, readProfileFiles } from '../../kernel/profile-files.js';
import { relayedCallRoute } from '../../kernel/relayed-call.js';
import { RELAY_CLOSE, type UpstreamFailures } from '../../kernel/socket-relay.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { LocalLiveCalls } from './local-live-calls.js';
import { LocalLiveKeys } from './local-live-key.js';
import { localLiveModelRoutes, localLiveStatusRoutes, type LocalLive } from './local-live-routes.js';
import { speechServerAddress } from './speech-server-url.js';

/** The bounds of this feature (the seed, speech server). */
const BOUNDS = {
  /** A reconnecting app opens a few sockets a minute; ten per profile is a loop. */
  connectsPerProfilePerMinute: 10,
  connectsHostWidePerMinute: 30,
  /**
   * Classic voice may listen while its reply plays through the same server (the seed asks for
   * `--num_pipelines 2`), so two per profile; eight on the host.
   */
  openPerProfile: 2,
  openOverall: 8,
  /** The server is on the user's network; one that has not answered by then is not coming. */
  connectTimeoutMs: 15_000,
  /** An audio chunk is a few KiB; a larger frame from the app is a bug or abuse. */
  clientFrameLimitBytes: 256 * 1024,
  upstreamFrameLimitBytes: 16 * 1024 * 1024,
  /** A socket that sends nothing this long is closed (the seed): a forgotten call holds a pipeline. */
  idleCloseMs: 60_000,
} as const;

const failures: UpstreamFailures = {
  unreachable: 'Could not reach the speech server',
  lost: 'The connection to the speech server was lost',
  refused(status) {
    if (status === 429) return { code: RELAY_CLOSE.rateLimited, reason: `The speech server is busy (HTTP ${status})` };
    if (status >= 400 && status < 500)
      return { code: RELAY_CLOSE.refused, reason: `The speech server refused the call (HTTP ${status})` };
    return { code: RELAY_CLOSE.unreachable, reason: `The speech server failed (HTTP ${status})` };
  },
  closed(code, reason) {
    if (code >= 3000 && code <= 4999)
      return { code: RELAY_CLOSE.refused, reason: `The speech server closed the call (${code}): ${reason}` };
    if (code === 1000) return { code: 1000, reason };
    return { code: RELAY_CLOSE.unreachable, reason: 'The connection to the speech server was lost' };
  },
};

/** The profile's speech server address and key, or the close that refuses a call (4503). */
async function speechServerTarget(
  kernel: FeatureKernel,
  profile: ProfileScope,
): Promise<{ url: string; key: string } | { code: number; reason: string }> {
  const files = await readProfileFiles(profile, kernel.serviceEnv);
  const settings = configSection(configSection(files.config, 'voice'), 'speech_server');
  const configured = typeof settings.url === 'string' ? settings.url.trim() : '';
  if (!configured)
    return { code: RELAY_CLOSE.notConfigured, reason: 'No speech server is set (voice.speech_server.url)' };
  const address = speechServerAddress(configured);
  if (!address.ok) return { code: RELAY_CLOSE.notConfigured, reason: address.reason };
  return { url: address.url, key: typeof settings.api_key === 'string' ? settings.api_key.trim() : '' };
}

/**
 * Each host's Local Live state, by its kernel: the socket (in the signed-in scope) and the model
 * routes (in their own scope) are registered separately but must see the same calls and keys.
 */
const localLiveByKernel = new WeakMap<FeatureKernel, LocalLive>();

function localLiveOf(kernel: FeatureKernel): LocalLive {
  let live = localLiveByKernel.get(kernel);
  if (!live) {
    live = { keys: new LocalLiveKeys(kernel.clock), calls: new LocalLiveCalls(kernel.timers, kernel.log) };
    localLiveByKernel.set(kernel, live);
  }
  return live;
}

/**
 * The speech server and Local Live: Classic voice (and Local Live's audio) reach a speech-to-speech
 * server the user runs on their own network through this host, which adds only the server's key, so
 * the server never needs to be exposed beyond that network. Local Live points that server's model
 * address at this host: each turn it hears goes to the profile's newest Local Live socket, where the
 * Conduit app answers it through Hermes, and the answer streams back as the model's reply.
 */
export const speechServerFeature: HostFeature = {
  name: 'speech-server',
  capabilities: [{ name: 'local-live', method: 'GET', path: getLocalLiveStatus.path }],
  register(scope, kernel) {
    const live = localLiveOf(kernel);
    // Before the server stops accepting: an answer still streaming would otherwise hold the close.
    scope.addHook('preClose', async () => live.calls.endAll());
    answerWithDetail(scope, {
      bodyLimitBytes: 16 * 1024,
      failure: (request, type) =>
        `Local Live ${request.method === 'POST' ? 'key rotation' : 'status'} failed on the host (${type})`,
    });
    localLiveStatusRoutes(scope, kernel, live, async (profile) => 'url' in (await speechServerTarget(kernel, profile)));

    relayedCallRoute(scope, kernel, {
      path: localLiveSocket.path,
      name: 'Speech server',
      query: localLiveSocketQuery,
      limits: {
        perProfilePerMinute: BOUNDS.connectsPerProfilePerMinute,
        hostWidePerMinute: BOUNDS.connectsHostWidePerMinute,
        openPerProfile: BOUNDS.openPerProfile,
        openOverall: BOUNDS.openOverall,
        tooManyConnections: 'Too many speech server connections; try again shortly',
        tooManyOpen: 'Too many speech server calls are open on this host',
      },
      connectTimeoutMs: BOUNDS.connectTimeoutMs,
      clientFrameLimitBytes: BOUNDS.clientFrameLimitBytes,
      upstreamFrameLimitBytes: BOUNDS.upstreamFrameLimitBytes,
      idle: { ms: BOUNDS.idleCloseMs, close: { code: 1000, reason: 'Nothing was sent for 60 seconds' } },
      attach: ({ profile, query, socket }) => live.calls.attach(profile.name, query.mode === 'speak', socket),
      async target(profile) {
        const target = await speechServerTarget(kernel, profile);
        if (!('url' in target)) return target;
        const headers: Record<string, string> = target.key ? { Authorization: `Bearer ${target.key}` } : {};
        return {
          url: target.url,
          headers,
          failures,
          credential: target.key ? 'api_key' : 'none',
        };
      },
    });
  },
  registerTokenRoutes(scope, kernel) {
    localLiveModelRoutes(scope, kernel, localLiveOf(kernel));
  },
};
