import type { FastifyInstance } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import { SHARED_STATE_UNAVAILABLE_BODY, SharedStateUnavailable } from '../cluster/shared-state-unavailable.js';
import { loggablePath } from './loggable-path.js';

/** One access-log line per request; the path has no query and no secret (loggablePath), no header is ever logged. */
export type AccessLog = (line: {
  level: 'info';
  method: string;
  path: string;
  status: number;
  duration_ms: number;
}) => void;

/**
 * The reference's reply conventions (§0): JSON replies carry no-store and nosniff; errors are
 * `{"error": code}`; anything unexpected is a logged 500 internal_error; unknown routes are 404.
 */
export function applyWireConventions(
  app: FastifyInstance,
  accessLog: AccessLog,
  errorLog: (error: unknown) => void,
): void {
  // Callback hooks, not async ones: each async hook costs every request a promise and a turn of the
  // microtask queue. The duration is Fastify's own (reply.elapsedTime, from when the request was
  // routed), so no hook of ours runs before the handler.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) {
      reply.header('content-type', 'application/json; charset=utf-8');
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    accessLog({
      level: 'info',
      method: request.method,
      path: loggablePath(request.url),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
    });
    done();
  });
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof WireError) {
      // 413: the reference destroys the socket rather than read the rest of an oversized body.
      if (error.status === 413) reply.header('connection', 'close');
      return reply.status(error.status).send(error.body());
    }
    if (error instanceof SharedStateUnavailable) {
      // Replicas only (REDIS_URL): Redis did not answer. Not a 500: nothing is wrong with the request,
      // and the client may retry in a second.
      return reply.status(503).header('retry-after', '1').send(SHARED_STATE_UNAVAILABLE_BODY);
    }
    const status = (error as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number' && status === 413) {
      reply.header('connection', 'close');
      return reply.status(413).send({ error: 'payload_too_large' });
    }
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return reply.status(400).send({ error: 'invalid_json' });
    }
    errorLog(error);
    return reply.status(500).send({ error: 'internal_error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: 'not_found' }));
}
