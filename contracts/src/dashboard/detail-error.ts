import { z } from 'zod';
import { errorBody } from '../route.js';
import { bodyRefusals } from './notification-settings.js';

/**
 * The error shape of the routes the reference plugin serves from inside the Hermes dashboard: FastAPI's
 * `HTTPException` → `{"detail": "<message>"}` (ROUTES.md, Common behaviour). The Conduit app shows the
 * message.
 */
export const detailErrorBody = z.object({ detail: z.string() });

/** A `{"detail"}` answer with its description. */
export function detailAnswer(description: string) {
  return { description, schema: detailErrorBody, headers: { 'Cache-Control': 'no-store' } };
}

/**
 * 503 from the route (`detail`: the profile cannot be resolved, which never falls back to the default
 * profile, or the feature's own reason), or from the host's caller check before it, in the host's own
 * shape: the Hermes dashboard could not confirm the caller.
 */
export function detailUnavailable(description: string) {
  return {
    description: `${description} Or the dashboard could not confirm the caller (\`dashboard_unavailable\`).`,
    schema: z.union([detailErrorBody, errorBody(['dashboard_unavailable'])]),
  };
}

/** What a POST route with a `{"detail"}` shape answers about its body before it runs. */
export const detailBodyRefusals = {
  400: detailAnswer('The body is not JSON (`Request body is not JSON`), or a field is refused (its message).'),
  413: detailAnswer('Request body is too large (declared or sent).'),
  415: bodyRefusals[415],
};

/** Headers of the token and key answers: never cached anywhere. */
export const noStoreNoCache = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** A 200 answer of these routes: `{"ok": true, …}`, never cached. */
export function noStoreAnswer<S extends z.ZodType>(description: string, schema: S) {
  return { description, schema, headers: { 'Cache-Control': 'no-store' } };
}
