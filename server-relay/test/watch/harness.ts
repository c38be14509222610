import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import { createRelayClient } from '@conduit/sdk/relay';
import type { ApnsSender } from '../../src/apns/types.js';
import { registerWatchFeatures, type WatchConfig, type WatchDeps } from '../../src/watch/index.js';

/**
 * A relay app with only the Watch features, for tests that need short seams and a controllable
 * clock: real Fastify listening on a port, real auth checks against an in-memory credential table,
 * a fixed-window limiter like the relay core's, bodies read as text as the relay core does.
 */
export interface WatchTestRelay {
  app: FastifyInstance;
  baseUrl: string;
  client: ReturnType<typeof createRelayClient>;
  /** Adds a paired gateway; returns its `Authorization` value and identity. */
  gateway(installationId?: string): { authorization: string; installationId: string; gatewayId: string };
  /** Adds a phone; returns its `Authorization` value. */
  device(): { authorization: string; installationId: string };
  clock: { now: number };
  /** Limiter keys hit so far, for asserting which bucket a request charged. */
  hits: string[];
  close(): Promise<void>;
}

export async function startWatchRelay(
  config: Partial<WatchConfig> = {},
  apns: ApnsSender = rejectingSender,
  options: { unlimited?: boolean } = {},
): Promise<WatchTestRelay> {
  const gateways = new Map<string, { installationId: string; gatewayId: string }>();
  const devices = new Map<string, { installationId: string }>();
  const windows = new Map<string, { count: number; resetAt: number }>();
  const clock = { now: Date.UTC(2026, 10, 29, 12, 0, 0) };
  const hits: string[] = [];
  const deps: WatchDeps = {
    authenticateGateway: (header) => Promise.resolve(gateways.get(header?.replace(/^Bearer\s+/i, '') ?? '') ?? null),
    authenticateDevice: (header) => Promise.resolve(devices.get(header?.replace(/^Bearer\s+/i, '') ?? '') ?? null),
    apns,
    rateLimit: {
      async hit(key, max, windowMs = 60_000) {
        hits.push(key);
        // Property tests switch limits off: they check what the body checks answer.
        if (options.unlimited) return true;
        const window = windows.get(key);
        if (!window || clock.now >= window.resetAt) {
          windows.set(key, { count: 1, resetAt: clock.now + windowMs });
          return true;
        }
        window.count += 1;
        return window.count <= max;
      },
    },
    clientIp: (request: IncomingMessage) => request.socket.remoteAddress ?? 'unknown',
    config: { publicUrl: 'https://relay.example', apnsTopic: 'com.example.conduit', ...config },
    now: () => clock.now,
  };
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof WireError) return reply.status(error.status).send(error.body());
    return reply.status(500).send({ error: 'internal_error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: 'not_found' }));
  registerWatchFeatures(app, deps);
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    baseUrl,
    client: createRelayClient({ baseUrl }),
    clock,
    hits,
    gateway(installationId = randomUUID()) {
      const gatewayId = randomUUID();
      const credential = `${installationId}.${gatewayId}.${randomBytes(32).toString('base64url')}`;
      gateways.set(credential, { installationId, gatewayId });
      return { authorization: `Bearer ${credential}`, installationId, gatewayId };
    },
    device() {
      const installationId = randomUUID();
      const credential = `${installationId}.${randomBytes(32).toString('base64url')}`;
      devices.set(credential, { installationId });
      return { authorization: `Bearer ${credential}`, installationId };
    },
    close: () => app.close(),
  };
}

const rejectingSender: ApnsSender = {
  send: () => Promise.reject(new Error('no APNs in this test')),
  close: () => Promise.resolve(),
};

/** A fresh Watch key and the SHA-256 hex the host registers for it. */
export function watchKey(): { key: string; sha256: string; authorization: string } {
  const key = randomBytes(32).toString('base64url');
  return { key, sha256: createHash('sha256').update(key, 'ascii').digest('hex'), authorization: `Bearer ${key}` };
}

export function b64(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/** A sealed-looking Watch call: 22-char rid, 16-char nonce, ciphertext. */
export function sealedCall(): { rid: string; n: string; ct: string } {
  return { rid: b64(16), n: b64(12), ct: b64(64) };
}
