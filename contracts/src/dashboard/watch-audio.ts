import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';

/** The Watch audio stream format this host speaks (CRYPTO.md §4, `WATCH_AUDIO_VERSION`). */
export const WATCH_AUDIO_VERSION = 1;

/** The engines a Watch call can reach through this host: GPT-Live (WebRTC) and Grok (WebSocket). */
export const WATCH_AUDIO_ENGINES = ['gpt_live', 'grok'] as const;
export type WatchAudioEngine = (typeof WATCH_AUDIO_ENGINES)[number];

/**
 * One engine's runtime on this host. The reference installs aiortc into a venv for GPT-Live; this host
 * runs WebRTC (werift) and Opus in its own process, so `ready` means those modules loaded here, and
 * `failed` (with the reason) that they could not. `preparing` and `missing` stay in the enum for the app.
 */
export const watchAudioEngineStatus = z.object({
  runtime: z.enum(['ready', 'preparing', 'failed', 'missing']),
  /** `plugin`: the runtime ships with this host; `hermes`: it is Hermes' own (Grok's xAI sign-in). */
  source: z.enum(['plugin', 'hermes']).nullable(),
  reason: z.string().nullable(),
});

export const watchAudioStatusResponse = z.object({
  ok: z.literal(true),
  version: z.literal(WATCH_AUDIO_VERSION),
  engines: z.object({ gpt_live: watchAudioEngineStatus, grok: watchAudioEngineStatus }),
});

export const watchAudioPrepareResponse = z.object({
  ok: z.literal(true),
  version: z.literal(WATCH_AUDIO_VERSION),
  engines: z.object({ gpt_live: watchAudioEngineStatus }),
});

/** A grant's `audio` field when it was opened with `audio: true`. */
export const watchAudioGrant = z.object({
  /** Where the Watch dials: `wss://<relay>/v1/watch-audio/{gid}/watch` (`ws://` for a loopback relay). */
  url: z.string(),
  version: z.literal(WATCH_AUDIO_VERSION),
  /** The engines a call on this grant may start. */
  engines: z.array(z.enum(WATCH_AUDIO_ENGINES)),
});

/** Whether this host can carry a Watch call's audio to GPT-Live and Grok. No profile. */
export const getWatchAudioStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/watch-audio/status',
  operationId: 'getWatchAudioStatus',
  summary: 'Watch audio runtimes on this host',
  tags: ['watch'],
  auth: 'bearer',
  responses: {
    200: noStoreAnswer('Each engine’s runtime.', watchAudioStatusResponse),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The dashboard could not confirm the caller.'),
  },
});

/**
 * Makes the GPT-Live runtime ready. The reference builds a Python venv with aiortc here; this host loads
 * its in-process WebRTC and Opus modules instead and answers their status. 5 per 300 s host-wide.
 */
export const postWatchAudioPrepare = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/watch-audio/prepare',
  operationId: 'postWatchAudioPrepare',
  summary: 'Prepare the GPT-Live runtime for Watch calls',
  tags: ['watch'],
  auth: 'bearer',
  responses: {
    200: noStoreAnswer('The GPT-Live runtime after preparing.', watchAudioPrepareResponse),
    401: unauthorized,
    429: detailAnswer('More than 5 prepares in 300 s on this host.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The dashboard could not confirm the caller.'),
  },
});
