import { z } from 'zod';

/** HTTP methods our wire surfaces use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';

/** How a route authenticates its caller (documented in OpenAPI as a security scheme). */
export type AuthScheme = 'none' | 'device' | 'gateway' | 'ring' | 'watchKey' | 'bearer' | 'localLiveKey';

export interface ResponseSpec<S extends z.ZodType = z.ZodType> {
  description: string;
  /** Body schema; absent for bodiless answers such as 204. */
  schema?: S;
  /** Content type of the body; JSON unless stated. */
  contentType?: string;
  /** Response headers the route sets, documented in OpenAPI. */
  headers?: Record<string, string>;
}

export type ResponseMap = Record<number, ResponseSpec>;

/**
 * Who reads the request body, and when:
 * - `bind` (the default): bindRoute validates it against `body` before the handler runs; the handler
 *   gets the schema's output as `body`.
 * - `handler`: the handler calls `readBody()` once the checks the wire puts before the body (rate limits,
 *   authentication) have passed; the same schema validates it then, with the same error codes.
 * - `raw`: the handler gets the unparsed body as `body: unknown` and reads it itself (a non-JSON content
 *   type, or an error shape of its own); `body` only documents it. A route that names a
 *   `bodyContentType` and no `bodyReading` is read raw.
 */
export type BodyReading = 'bind' | 'handler' | 'raw';

export interface RouteContract<
  Params extends z.ZodObject = z.ZodObject,
  Query extends z.ZodObject = z.ZodObject,
  Body extends z.ZodType = z.ZodType,
  Responses extends ResponseMap = ResponseMap,
  Reading extends BodyReading = BodyReading,
> {
  method: HttpMethod;
  /** OpenAPI-style path with `{name}` parameters. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  auth: AuthScheme;
  params?: Params;
  query?: Query;
  /**
   * Request body. When it fails, the first issue's message, if it is a wire error code (`invalid_topic`),
   * is answered with the status the route declares for that code (400 unless declared elsewhere).
   */
  body?: Body;
  /** When and by whom the body is read (see BodyReading); `bind` unless stated. */
  bodyReading?: Reading;
  /** Content type of the body, for the documentation (JSON unless stated). */
  bodyContentType?: string;
  /**
   * The wire error code of a failure anywhere under a top-level body field (`device_token` →
   * `invalid_device_token`), so shared schemas need not carry codes in their messages. The first issue
   * decides, in the schema's order of checks: its own message if that is a code, else this table.
   */
  bodyErrorCodes?: Partial<Record<keyof z.output<Body> & string, string>>;
  /** The error code answered when the body fails and neither the issue nor bodyErrorCodes names one. */
  invalidBodyCode?: string;
  responses: Responses;
}

/** Declares a route; the identity function exists so TypeScript keeps the literal types. */
export function defineRoute<
  Params extends z.ZodObject = z.ZodObject<Record<string, never>>,
  Query extends z.ZodObject = z.ZodObject<Record<string, never>>,
  Body extends z.ZodType = z.ZodUndefined,
  const Responses extends ResponseMap = ResponseMap,
  const ContentType extends string | undefined = undefined,
  // Without a `bodyReading`, a route that names a content type reads raw, as bindRoute does at run time.
  const Reading extends BodyReading = [ContentType] extends [undefined] ? 'bind' : 'raw',
>(
  route: RouteContract<Params, Query, Body, Responses, Reading> & { bodyContentType?: ContentType },
): RouteContract<Params, Query, Body, Responses, Reading> {
  return route;
}

/** `{"error": code}` with the codes a route may answer, plus optional extra fields. */
export function errorBody<const Codes extends readonly [string, ...string[]]>(codes: Codes) {
  return z.object({ error: z.enum(codes) });
}

/** The statuses a route declares, as a union of numbers. */
export type StatusOf<R extends RouteContract> = keyof R['responses'] & number;

/** The body type of one declared status (`undefined` when bodiless). */
export type BodyOf<R extends RouteContract, S extends number> = S extends keyof R['responses']
  ? R['responses'][S] extends { schema: infer Schema extends z.ZodType }
    ? z.output<Schema>
    : undefined
  : never;

/** Every answer a handler may give for a route: a declared status with its body. */
export type ReplyOf<R extends RouteContract> = {
  [S in StatusOf<R>]: { status: S; body: BodyOf<R, S>; headers?: Record<string, string> };
}[StatusOf<R>];

/** The `error` codes a route declares at one status (`never` where that answer has no `error` field). */
export type ErrorCodeOf<R extends RouteContract, S extends number> =
  BodyOf<R, S> extends { error: infer Code extends string } ? Code : never;

/** Every `{status, code}` a route may answer as `{"error": code, ...}`. */
export type ErrorOf<R extends RouteContract> = {
  [S in StatusOf<R>]: [ErrorCodeOf<R, S>] extends [never] ? never : { status: S; code: ErrorCodeOf<R, S> };
}[StatusOf<R>];

// NonNullable: `params`, `query` and `body` are optional members, so R['params'] includes undefined.
export type ParamsOf<R extends RouteContract> =
  NonNullable<R['params']> extends z.ZodObject ? z.output<NonNullable<R['params']>> : Record<string, never>;
export type QueryOf<R extends RouteContract> =
  NonNullable<R['query']> extends z.ZodObject ? z.output<NonNullable<R['query']>> : Record<string, never>;
/** The body after the contract validated it: the body schema's output (`undefined` for a route without one). */
export type BodyInputOf<R extends RouteContract> =
  NonNullable<R['body']> extends z.ZodType ? z.output<NonNullable<R['body']>> : undefined;
/** How the route's body is read (`bind` unless the contract says otherwise). */
export type BodyReadingOf<R extends RouteContract> = NonNullable<R['bodyReading']>;

/** A named collection of routes, one per served surface (relay, dashboard, voice). */
export interface Surface {
  name: string;
  title: string;
  version: string;
  description: string;
  routes: Record<string, RouteContract>;
}
