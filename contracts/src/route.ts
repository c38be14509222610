import { z } from 'zod';

/** HTTP methods our wire surfaces use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';

/** How a route authenticates its caller (documented in OpenAPI as a security scheme). */
export type AuthScheme = 'none' | 'device' | 'gateway' | 'ring' | 'watchKey' | 'bearer';

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

export interface RouteContract<
  Params extends z.ZodObject = z.ZodObject,
  Query extends z.ZodObject = z.ZodObject,
  Body extends z.ZodType = z.ZodType,
  Responses extends ResponseMap = ResponseMap,
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
  /** JSON request body. A failing issue whose message is a wire error code (`invalid_topic`) answers 400 with it. */
  body?: Body;
  /** Content type of the body when it is not JSON (the route then parses it itself). */
  bodyContentType?: string;
  /** The error code answered when the body fails and its issue carries no code of its own. */
  invalidBodyCode?: string;
  responses: Responses;
}

/** Declares a route; the identity function exists so TypeScript keeps the literal types. */
export function defineRoute<
  Params extends z.ZodObject = z.ZodObject<Record<string, never>>,
  Query extends z.ZodObject = z.ZodObject<Record<string, never>>,
  Body extends z.ZodType = z.ZodUndefined,
  const Responses extends ResponseMap = ResponseMap,
>(route: RouteContract<Params, Query, Body, Responses>): RouteContract<Params, Query, Body, Responses> {
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

// NonNullable: `params`/`query` are optional members, so R['params'] includes undefined.
export type ParamsOf<R extends RouteContract> =
  NonNullable<R['params']> extends z.ZodObject ? z.output<NonNullable<R['params']>> : Record<string, never>;
export type QueryOf<R extends RouteContract> =
  NonNullable<R['query']> extends z.ZodObject ? z.output<NonNullable<R['query']>> : Record<string, never>;
export type BodyInputOf<R extends RouteContract> = R['body'] extends z.ZodType ? z.output<R['body']> : undefined;

/** A named collection of routes, one per served surface (relay, dashboard, voice). */
export interface Surface {
  name: string;
  title: string;
  version: string;
  description: string;
  routes: Record<string, RouteContract>;
}
