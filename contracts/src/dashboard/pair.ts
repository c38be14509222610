import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import { bodyRefusals, noStore, unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/** FastAPI-style error body the Hermes dashboard answers (`HTTPException` → `{"detail": "..."}`). */
export const pairingErrorBody = z.object({ detail: z.string() });

/**
 * 503 from the route (`detail`), or from the host's caller check before it, in the host's own shape:
 * the Hermes dashboard could not confirm the caller.
 */
export function pairingUnavailable(description: string) {
  return {
    description: `${description} Or the dashboard could not confirm the caller (\`dashboard_unavailable\`).`,
    schema: z.union([pairingErrorBody, errorBody(['dashboard_unavailable'])]),
  };
}

export const pairRequest = z.object({
  /** The code Conduit created (`XXXXX-XXXXX`, 10 characters of `ABCDEFGHJKLMNPQRSTUVWXYZ23456789`). */
  pairing_code: z.string(),
  /** A bare http(s) relay URL; defaults to the profile's current relay, else https://push.milim.dev. */
  relay_url: z.string().optional(),
});

export const pairAnswer = z.object({
  ok: z.literal(true),
  paired: z.literal(true),
  installation_id: z.string(),
  gateway_id: z.string(),
  gateway_name: z.string(),
  relay_url: z.string(),
});

/**
 * Pairs a profile from Conduit itself (plugin 0.24+): the app creates the code on the relay and hands it
 * over the signed-in dashboard connection. Makes the same claim as `conduit push pair`; the answer never
 * includes the credential. A re-pair keeps the redaction choice, and keeps the E2E key only when the same
 * phone and gateway pair again.
 */
export const postPair = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/pair',
  operationId: 'postPair',
  summary: 'Pair this Hermes profile with Conduit',
  tags: ['pairing'],
  auth: 'bearer',
  query: profileQuery,
  body: pairRequest,
  bodyContentType: 'application/json',
  // Read by the handler as the Hermes dashboard reads it (FastAPI's `{"detail"}` errors, 4 KiB).
  bodyReading: 'raw',
  responses: {
    200: { description: 'Paired; the credential is stored on the host only.', schema: pairAnswer, headers: noStore },
    400: { description: 'Malformed pairing code or relay URL, or a body that is not JSON.', schema: pairingErrorBody },
    401: unauthorized,
    409: {
      description: "The profile's conduit-push.json is unreadable (it is never overwritten).",
      schema: pairingErrorBody,
    },
    410: { description: 'The code expired or was already used.', schema: pairingErrorBody },
    413: { description: 'Request body is too large.', schema: pairingErrorBody },
    415: bodyRefusals[415],
    429: {
      description: 'More than 10 pairing requests a minute, or the relay refused for capacity.',
      schema: pairingErrorBody,
    },
    502: { description: 'The relay could not be reached or answered unusably.', schema: pairingErrorBody },
    503: pairingUnavailable('The profile cannot be resolved (never falls back to another profile).'),
  },
});
