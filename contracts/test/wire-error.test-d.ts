import Fastify from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';
import { respondDecision } from '../src/relay/decisions.js';
import { healthz } from '../src/relay/health.js';
import type { ErrorCodeOf, ErrorOf } from '../src/route.js';
import { bindRoute, WireError } from '../src/server/index.js';

/**
 * Type-level tests (vitest --typecheck, tsc): a WireError can only name a status and code some route
 * declares, and a handler can only answer what its own route declares.
 */
describe('WireError is typed to the declared errors', () => {
  it('refuses a status or code no route declares', () => {
    // @ts-expect-error 418 is declared by no route
    void new WireError(418, 'x');
    // @ts-expect-error no route declares `x` with 429
    void new WireError(429, 'x');
    // @ts-expect-error invalid_topic is declared with 400, not 404
    void new WireError(404, 'invalid_topic');
    void new WireError(429, 'rate_limited');
    void new WireError(409, 'already_settled', { settled: { by: 'phone', outcome: 'answered' } });
  });

  it('an undeclared throw in a handler does not compile', () => {
    const app = Fastify();
    bindRoute(app, healthz, () => {
      // @ts-expect-error 418 is declared by no route
      throw new WireError(418, 'x');
    });
  });

  it('a handler answers only its own route’s statuses and bodies', () => {
    const app = Fastify();
    // @ts-expect-error healthz declares no 404
    bindRoute(app, healthz, () => ({ status: 404, body: { error: 'not_found' } }));
    // @ts-expect-error healthz's 200 is {ok: true}
    bindRoute(app, healthz, () => ({ status: 200, body: { ok: false } }));
    bindRoute(app, healthz, () => ({ status: 200, body: { ok: true } }));
  });

  it('a route’s declared errors are read off its contract', () => {
    expectTypeOf<ErrorCodeOf<typeof respondDecision, 404>>().toEqualTypeOf<'unknown_decision' | 'not_found'>();
    expectTypeOf<Extract<ErrorOf<typeof respondDecision>, { status: 410 }>>().toEqualTypeOf<{
      status: 410;
      code: 'decision_released';
    }>();
  });
});
