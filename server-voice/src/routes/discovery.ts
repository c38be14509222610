import type { FastifyInstance } from 'fastify';
import { discoveryOptions, getDiscovery } from '@conduit/contracts/voice/discovery';
import { bindRoute } from '@conduit/contracts/server';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { VoiceConfig } from '../config.js';
import type { SpeechSelection } from '../providers/hermes-speech.js';
import { preflightHeaders } from './cors.js';

export function discoveryRoutes(app: FastifyInstance, config: VoiceConfig, speech: SpeechSelection): void {
  bindRoute(app, getDiscovery, ({ request }) => {
    if (!bearerMatches(request.headers.authorization, config.apiKey)) return { status: 401, body: 'unauthorized' };
    // `speech` says which transcription and speech providers answer and where their settings came from
    // (source, provider, model, voice, the fallback's reason; never a key or URL).
    return {
      status: 200,
      body: { version: 1, profile: config.profile, realtime_path: '/v1/realtime/calls', speech },
      headers: { 'cache-control': 'no-store' },
    };
  });
  bindRoute(app, discoveryOptions, ({ request }) => ({
    status: 204,
    body: undefined,
    headers: preflightHeaders(request),
  }));
}
