import type { FastifyInstance } from 'fastify';
import { discoveryOptions, getDiscovery } from '@conduit/contracts/voice/discovery';
import { bindRoute } from '@conduit/contracts/server';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { VoiceConfig } from '../config.js';
import { preflightHeaders } from './cors.js';

export function discoveryRoutes(app: FastifyInstance, config: VoiceConfig): void {
  bindRoute(app, getDiscovery, ({ request }) => {
    if (!bearerMatches(request.headers.authorization, config.apiKey)) return { status: 401, body: 'unauthorized' };
    return {
      status: 200,
      body: { version: 1, profile: config.profile, realtime_path: '/v1/realtime/calls' },
      headers: { 'cache-control': 'no-store' },
    };
  });
  bindRoute(app, discoveryOptions, ({ request }) => ({
    status: 204,
    body: undefined,
    headers: preflightHeaders(request),
  }));
}
