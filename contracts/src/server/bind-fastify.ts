import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { BodyInputOf, BodyReading, BodyReadingOf, ParamsOf, QueryOf, ReplyOf, RouteContract } from '../route.js';
import { WireError } from './wire-error.js';

interface BoundBase<R extends RouteContract> {
  params: ParamsOf<R>;
  query: QueryOf<R>;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** The body as the route's `bodyReading` hands it over (see BodyReading in route.ts). */
export type BodyAccess<R extends RouteContract> =
  BodyReadingOf<R> extends 'handler'
    ? {
        /**
         * Reads the body and validates it against the contract now, after the checks the wire puts first;
         * a failure throws the contract's WireError. Reads once: later calls return the same value.
         */
        readBody: () => BodyInputOf<R>;
      }
    : BodyReadingOf<R> extends 'raw'
      ? { /** The unparsed body; the handler reads it itself. */ body: unknown }
      : { /** The body the contract validated (`undefined` for a route without one). */ body: BodyInputOf<R> };

/** What a bound handler sees: validated params and query, the body per the contract, the raw request and reply. */
export type BoundRequest<R extends RouteContract> = BoundBase<R> & BodyAccess<R>;

export type Handler<R extends RouteContract> = (input: BoundRequest<R>) => Promise<ReplyOf<R>> | ReplyOf<R>;

export interface BindOptions {
  /** The answer when path parameters fail their pattern (the relay answers 404 not_found). */
  invalidParams?: WireError;
  /** The answer when the query fails and the issue names no code. */
  invalidQuery?: WireError;
  /** Runs before the body is validated (the relay authenticates some routes before reading the body). */
  preValidation?: (request: FastifyRequest) => Promise<void> | void;
}

const WIRE_CODE = /^[a-z][a-z0-9_]*$/;

/** The wire code carried by the first failing issue, if its message is one (`invalid_topic`). */
export function issueCode(error: z.ZodError): string | undefined {
  const message = error.issues[0]?.message;
  return message && WIRE_CODE.test(message) ? message : undefined;
}

/** `/v1/installations/{id}` → `/v1/installations/:id` */
export function fastifyPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/** The contract's answer to a body that fails its schema. */
function bodyError(route: RouteContract, error: z.ZodError): WireError {
  return new WireError(400, issueCode(error) ?? route.invalidBodyCode ?? 'invalid_request');
}

/** BodyReading at run time: as declared, else `raw` for a route that names a content type, else `bind` (as defineRoute types it). */
export function bodyReadingOf(route: RouteContract): BodyReading {
  return route.bodyReading ?? (route.bodyContentType ? 'raw' : 'bind');
}

/**
 * Binds one contract to a handler on a Fastify app. The contract decides method, path, validation and
 * every status the handler may answer; TypeScript rejects a reply the contract does not declare.
 * (tRPC cannot express this wire — bare `{"error": code}` bodies, 202/204, extra error fields — so every
 * route goes through this adapter; see contracts/README.md.)
 */
export function bindRoute<R extends RouteContract>(
  app: FastifyInstance,
  route: R,
  handler: NoInfer<Handler<R>>,
  options: BindOptions = {},
): void {
  const reading = bodyReadingOf(route);
  const validBody = (request: FastifyRequest): unknown => {
    if (!route.body) return undefined;
    const parsed = route.body.safeParse(request.body ?? {});
    if (!parsed.success) throw bodyError(route, parsed.error);
    return parsed.data;
  };

  const answer = async (request: FastifyRequest, reply: FastifyReply): Promise<ReplyOf<R>> => {
    if (route.params) {
      const parsed = route.params.safeParse(request.params ?? {});
      if (!parsed.success) throw options.invalidParams ?? new WireError(404, 'not_found');
      request.params = parsed.data;
    }
    let query: unknown = {};
    if (route.query) {
      const parsed = route.query.safeParse(request.query ?? {});
      if (!parsed.success) {
        const code = issueCode(parsed.error);
        throw code ? new WireError(400, code) : (options.invalidQuery ?? new WireError(400, 'invalid_query'));
      }
      query = parsed.data;
    }
    if (options.preValidation) await options.preValidation(request);
    const input: Record<string, unknown> = { params: request.params, query, request, reply };
    if (reading === 'raw') {
      input.body = request.body;
    } else if (reading === 'handler') {
      let read: { value: unknown } | undefined;
      input.readBody = () => (read ??= { value: validBody(request) }).value;
    } else {
      input.body = validBody(request);
    }
    return handler(input as unknown as BoundRequest<R>);
  };

  app.route({
    method: route.method,
    url: fastifyPath(route.path),
    handler: async (request, reply) => {
      const result = await answer(request, reply);
      const spec = route.responses[result.status];
      reply.status(result.status);
      if (result.headers) reply.headers(result.headers);
      if (spec?.contentType && !reply.hasHeader('content-type')) reply.type(spec.contentType);
      return reply.send(result.body);
    },
  });
}
