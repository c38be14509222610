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
  /** Check every reply the route sends against its contract (default: in test builds, replyChecksEnabled). */
  checkReplies?: boolean;
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
 * Test builds check every reply against the contract: vitest sets VITEST (and NODE_ENV=test), and
 * server processes a test starts inherit it. CONDUIT_CHECK_REPLIES=1 or 0 forces it either way.
 */
export function replyChecksEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.CONDUIT_CHECK_REPLIES === '1') return true;
  if (env.CONDUIT_CHECK_REPLIES === '0') return false;
  return env.VITEST !== undefined || env.NODE_ENV === 'test';
}

/** A reply its route's contract does not declare: a bug (answered 500 in test builds, see checkSentReply). */
export class UndeclaredReplyError extends Error {
  constructor(
    readonly route: Pick<RouteContract, 'method' | 'path' | 'operationId'>,
    readonly status: number,
    reason: string,
  ) {
    // The body is left out: replies carry credentials, and this message reaches logs.
    super(`${route.method} ${route.path} (${route.operationId}) answered ${status}: ${reason}`);
    this.name = 'UndeclaredReplyError';
  }
}

/** Throws UndeclaredReplyError unless the contract declares this status with a body of this shape. */
export function checkDeclaredReply(route: RouteContract, status: number, body: unknown): void {
  const spec = route.responses[status];
  if (!spec) throw new UndeclaredReplyError(route, status, 'the contract declares no such status');
  if (!spec.schema) {
    if (body !== undefined) throw new UndeclaredReplyError(route, status, 'a body where the contract declares none');
    return;
  }
  const parsed = spec.schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new UndeclaredReplyError(route, status, `a body its schema refuses${where}: ${issue?.message ?? ''}`);
  }
}

/** The body as it goes out: JSON parsed, other text as text, undefined when empty; null for a stream (not checked). */
function sentBody(reply: FastifyReply, payload: unknown): { body: unknown } | null {
  if (payload === undefined || payload === null || payload === '') return { body: undefined };
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
  if (text === null) return null;
  if (!/\bjson\b/.test(String(reply.getHeader('content-type') ?? ''))) return { body: text };
  try {
    return { body: JSON.parse(text) as unknown };
  } catch {
    return { body: text };
  }
}

/**
 * The test-build check of every reply a route sends: one its contract does not declare is replaced by
 * `500 {"error":"undeclared_reply","message":…}`, which no test expects. A 500 is left as it is: it is a
 * failure already, and its own answer says more.
 */
function checkSentReply(route: RouteContract) {
  return async (_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    if (reply.statusCode === 500) return payload;
    const sent = sentBody(reply, payload);
    if (!sent) return payload;
    try {
      checkDeclaredReply(route, reply.statusCode, sent.body);
      return payload;
    } catch (error) {
      if (!(error instanceof UndeclaredReplyError)) throw error;
      reply.code(500).type('application/json; charset=utf-8');
      return JSON.stringify({ error: 'undeclared_reply', message: error.message });
    }
  };
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

// A code the contract names at run time (an issue's message, bodyErrorCodes) cannot be checked against
// the declared pairs by the compiler; test builds check it with every other reply.
const RuntimeWireError = WireError as unknown as new (status: number, code: string) => WireError;

// Such a code is answered with the status the contract declares it under, so `{pairing_code: 5}` is the
// claim route's 404, not a 400.
function contractError(route: RouteContract, code: string): WireError {
  return new RuntimeWireError(declaredStatusOf(route, code) ?? 400, code);
}

/** BodyReading at run time: as declared, else `raw` for a route that names a content type, else `bind` (as defineRoute types it). */
export function bodyReadingOf(route: RouteContract): BodyReading {
  return route.bodyReading ?? (route.bodyContentType ? 'raw' : 'bind');
}

/**
 * Binds one contract to a handler on a Fastify app. The contract decides method, path, validation and
 * every status the handler may answer: TypeScript rejects a reply the contract does not declare, and in test
 * builds a reply the route sends with a status or body its contract does not declare becomes a 500.
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
  const checkReplies = options.checkReplies ?? replyChecksEnabled();
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
        throw code ? contractError(route, code) : (options.invalidQuery ?? contractError(route, 'invalid_query'));
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
    // Checked as sent, whoever produced it: the handler, a WireError through the app's error handler
    // (in whatever shape that app answers), bindRoute's own checks, Fastify's body limit.
    ...(checkReplies ? { onSend: checkSentReply(route) } : {}),
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
