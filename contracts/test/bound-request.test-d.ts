import { describe, expectTypeOf, it } from 'vitest';
import { putCronNotifications, putReplySources } from '../src/dashboard/notification-settings.js';
import { respondApproval } from '../src/dashboard/approvals.js';
import { postPair } from '../src/dashboard/pair.js';
import { healthz } from '../src/relay/health.js';
import { defineRoute, type BodyInputOf } from '../src/route.js';
import type { BoundRequest } from '../src/server/index.js';
import { z } from 'zod';

/**
 * Type-level tests, run by `vitest --typecheck` and by `tsc` (npm run typecheck): what a bound handler
 * is handed for its body, per the route's BodyReading.
 */
describe('the body a handler is handed', () => {
  it('is the body schema’s output when bindRoute validates it', () => {
    expectTypeOf<BodyInputOf<typeof putCronNotifications>>().toEqualTypeOf<{ job_id: string; notify: boolean }>();
    expectTypeOf<BoundRequest<typeof putCronNotifications>['body']>().toEqualTypeOf<{
      job_id: string;
      notify: boolean;
    }>();
    expectTypeOf<BoundRequest<typeof putReplySources>['body']['source']>().toEqualTypeOf<
      'conduit' | 'desktop' | 'messaging' | 'terminal'
    >();
    expectTypeOf<BoundRequest<typeof respondApproval>['body']['run_id']>().toEqualTypeOf<string | undefined>();
    // @ts-expect-error the contract's body has no such field
    type _Missing = BoundRequest<typeof putCronNotifications>['body']['jobId'];
  });

  it('is undefined for a route without a body', () => {
    expectTypeOf<BodyInputOf<typeof healthz>>().toEqualTypeOf<undefined>();
    expectTypeOf<BoundRequest<typeof healthz>['body']>().toEqualTypeOf<undefined>();
  });

  it('is unknown for a route that reads its body raw', () => {
    expectTypeOf<BoundRequest<typeof postPair>['body']>().toEqualTypeOf<unknown>();
  });

  it('is read through readBody() for a route whose handler reads it after its own checks', () => {
    const _route = defineRoute({
      method: 'POST',
      path: '/x',
      operationId: 'x',
      summary: 'x',
      auth: 'none',
      bodyReading: 'handler',
      body: z.object({ n: z.number() }),
      responses: { 204: { description: 'done' } },
    });
    expectTypeOf<ReturnType<BoundRequest<typeof _route>['readBody']>>().toEqualTypeOf<{ n: number }>();
    // @ts-expect-error the body is only there through readBody()
    type _NoBody = BoundRequest<typeof _route>['body'];
  });
});
