import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WireError } from '@conduit/contracts/server';

/**
 * The Hermes dashboard's error shape (FastAPI `HTTPException` → `{"detail": "<message>"}`), which the
 * Conduit app reads on the routes the reference plugin serves (ROUTES.md, Common behaviour).
 */
export class DetailError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'DetailError';
  }
}

/** Most error answers of these routes must not be cached; the token and key routes add Pragma too. */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/** The reference's `_read_json_body`: an empty body is `{}`, a body that does not parse is 400. */
export function readJsonBody(raw: unknown): unknown {
  if (raw === undefined || raw === null) return {};
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : null;
  if (text === null) return raw;
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DetailError(400, 'Request body is not JSON');
  }
}

export interface DetailScopeOptions {
  /** Largest body read, in bytes; a larger one (declared or sent) answers 413. */
  bodyLimitBytes: number;
  /** Turns a failure only this scope meets into its answer (undefined: not one of them). */
  known?: (error: Error) => DetailError | undefined;
  /** The 500 detail for an unexpected failure: `"<Feature> <route> failed on the host (<ExceptionType>)"`. */
  failure: (request: FastifyRequest, errorName: string) => string;
}

/**
 * Makes an encapsulated scope answer as the reference's routes do: bodies of any content type read
 * here as bytes up to a bound (parsed by the handler with readJsonBody), every error as `{"detail"}`
 * with `Cache-Control: no-store`, an unexpected one by its type only — never its message, which may
 * carry upstream text.
 */
export function answerWithDetail(scope: FastifyInstance, options: DetailScopeOptions): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes }, (_request, body, done) =>
    done(null, body),
  );
  scope.setErrorHandler((thrown: FastifyError, request, reply: FastifyReply) => {
    const error = options.known?.(thrown) ?? thrown;
    if (error instanceof DetailError)
      return reply.status(error.status).headers(NO_STORE).send({ detail: error.message });
    if (error instanceof WireError) {
      // bindRoute's own checks (a malformed ?profile=) answer in the dashboard's shape too.
      const detail = typeof error.extra.detail === 'string' ? error.extra.detail : error.code;
      return reply.status(error.status).headers(NO_STORE).send({ detail });
    }
    if (thrown.statusCode === 413 || thrown.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.status(413).headers(NO_STORE).send({ detail: 'Request body is too large' });
    }
    if (typeof thrown.statusCode === 'number' && thrown.statusCode >= 400 && thrown.statusCode < 500) {
      return reply.status(400).headers(NO_STORE).send({ detail: 'Request body is not readable' });
    }
    return reply
      .status(500)
      .headers(NO_STORE)
      .send({ detail: options.failure(request, thrown.name || 'Error') });
  });
}
