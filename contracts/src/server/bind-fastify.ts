import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { BodyInputOf, ParamsOf, QueryOf, ReplyOf, RouteContract } from '../route.js';
import { WireError } from './wire-error.js';

/** What a bound handler sees: validated params, query and body, plus the raw request for headers and the socket. */
export interface BoundRequest<R extends RouteContract> {
  params: ParamsOf<R>;
  query: QueryOf<R>;
  body: BodyInputOf<R>;
  request: FastifyRequest;
  reply: FastifyReply;
}

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
  app.route({
    method: route.method,
    url: fastifyPath(route.path),
    handler: async (request, reply) => {
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
      let body: unknown = undefined;
      if (route.body && !route.bodyContentType) {
        const parsed = route.body.safeParse(request.body ?? {});
        if (!parsed.success) {
          throw new WireError(400, issueCode(parsed.error) ?? route.invalidBodyCode ?? 'invalid_request');
        }
        body = parsed.data;
      } else if (route.bodyContentType) {
        body = request.body;
      }
      const result = await handler({
        params: request.params as ParamsOf<R>,
        query: query as QueryOf<R>,
        body: body as BodyInputOf<R>,
        request,
        reply,
      });
      const spec = route.responses[result.status];
      reply.status(result.status);
      if (result.headers) reply.headers(result.headers);
      if (spec?.contentType && !reply.hasHeader('content-type')) reply.type(spec.contentType);
      return reply.send(result.body);
    },
  });
}
