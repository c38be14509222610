import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type {
  BodyInputOf,
  BodyReading,
  BodyReadingOf,
  ParamsOf,
  QueryOf,
  ReplyOf,
  ResponseSpec,
  RouteContract,
} from '../route.js';
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

export interface BindOptions<R extends RouteContract = RouteContract> {
  /** The answer when path parameters fail their pattern (the relay answers 404 not_found). */
  invalidParams?: WireError;
  /** The answer when the query fails and the issue names no code. */
  invalidQuery?: WireError;
  /** Runs before the body is validated (the relay authenticates some routes before reading the body). */
  preValidation?: (request: FastifyRequest) => Promise<void> | void;
  /**
   * Turns the request's body into the JSON value the contract validates: the relay's reference rules
   * (its size bound, `{}` for an empty body, 400 invalid_json). Default: what Fastify's parser produced,
   * `{}` when there is none.
   */
  readJson?: (request: FastifyRequest) => unknown;
  /**
   * Tightens the contract's body schema with what only the server knows (the relay's APNS_TOPIC, its
   * clock), keeping the schema's order of checks: `extend` a field in place, or add a refinement that
   * runs after the fields.
   */
  narrowBody?: (schema: NonNullable<R['body']>) => z.ZodType<BodyInputOf<R>>;
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

/** The `error` codes one declared answer allows (its schema's `error` field: an enum or a literal). */
export function declaredCodes(spec: ResponseSpec | undefined): string[] {
  const schema = spec?.schema;
  if (!(schema instanceof z.ZodObject)) return [];
  const error: unknown = schema.shape.error;
  if (error instanceof z.ZodEnum) return error.options.map(String);
  if (error instanceof z.ZodLiteral) return [...error.values].map(String);
  return [];
}

/** The status a route declares for an error code: 400 when it is declared there, else the first that declares it. */
export function declaredStatusOf(route: RouteContract, code: string): number | undefined {
  const statuses = Object.keys(route.responses).map(Number);
  const declaring = statuses.filter((status) => declaredCodes(route.responses[status]).includes(code));
  return declaring.includes(400) ? 400 : declaring[0];
}

/** The wire code of a body that fails its schema: the first issue's own code, its field's, or the route's. */
export function bodyErrorCode(route: RouteContract, error: z.ZodError): string {
  const field = error.issues[0]?.path[0];
  const fieldCodes = route.bodyErrorCodes as Record<string, string> | undefined;
  return (
    issueCode(error) ??
    (typeof field === 'string' ? fieldCodes?.[field] : undefined) ??
    route.invalidBodyCode ??
    'invalid_request'
  );
}

// A code the contract names at run time (an issue's message, bodyErrorCodes) is answered with the status
// the contract declares for it, so `{pairing_code: 5}` is the claim route's 404, not a 400.
function contractError(route: RouteContract, code: string): WireError {
  return new WireError(declaredStatusOf(route, code) ?? 400, code);
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
  options: NoInfer<BindOptions<R>> = {},
): void {
  const reading = bodyReadingOf(route);
  const bodySchema: z.ZodType | undefined =
    route.body && options.narrowBody ? options.narrowBody(route.body as NonNullable<R['body']>) : route.body;
  const validBody = (request: FastifyRequest): unknown => {
    if (!bodySchema) return undefined;
    const raw = options.readJson ? options.readJson(request) : (request.body ?? {});
    const parsed = bodySchema.safeParse(raw);
    if (!parsed.success) throw contractError(route, bodyErrorCode(route, parsed.error));
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
        throw code ? contractError(route, code) : (options.invalidQuery ?? new WireError(400, 'invalid_query'));
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
