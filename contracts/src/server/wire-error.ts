import type { dashboardSurface } from '../dashboard/index.js';
import type { relaySurface } from '../relay/index.js';
import type { ErrorOf, RouteContract } from '../route.js';

type RoutesOf<S extends { routes: Record<string, RouteContract> }> = S['routes'][keyof S['routes']];
// Distributes over the routes: ErrorOf of a union of routes would only see the statuses they all share.
type ErrorsOf<R> = R extends RouteContract ? ErrorOf<R> : never;

/**
 * Every `{status, code}` some route of the surfaces that answer `{"error": code}` (relay, dashboard)
 * declares. The voice gateway answers text/plain errors and never throws a WireError.
 */
export type DeclaredWireError = ErrorsOf<RoutesOf<typeof relaySurface>> | ErrorsOf<RoutesOf<typeof dashboardSurface>>;
/** A status some route declares with an error code. */
export type WireStatus = DeclaredWireError['status'];
/** The codes declared with one status. */
export type WireCode<S extends number = WireStatus> = Extract<DeclaredWireError, { status: S }>['code'];

/**
 * A failure the wire defines: answered as `{"error": code, ...extra}` with its status.
 * Handlers throw it; one error handler per app turns it into the reply.
 *
 * Typed to what the contracts declare: `new WireError(418, 'x')` does not compile, nor a code no route
 * declares with that status. TypeScript cannot see which route a `throw` leaves, so whether the route
 * that throws declares the pair is checked at run time, in test builds, by bindRoute.
 */
export class WireError<S extends WireStatus = WireStatus, C extends WireCode<S> = WireCode<S>> extends Error {
  constructor(
    readonly status: S,
    readonly code: C,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(code);
    this.name = 'WireError';
  }

  body(): Record<string, unknown> {
    return { error: this.code, ...this.extra };
  }
}
