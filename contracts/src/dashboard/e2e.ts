import { z } from 'zod';
import { defineRoute } from '../route.js';
import { bodyRefusals, noStore, unauthorized } from './notification-settings.js';
import { pairingErrorBody, pairingUnavailable } from './pair.js';
import { profileQuery } from './profile.js';

export const e2eStatusAnswer = z.union([
  z.object({ ok: z.literal(true), paired: z.literal(false), crypto: z.boolean() }),
  z.object({
    ok: z.literal(true),
    paired: z.literal(true),
    installation_id: z.string(),
    gateway_id: z.string(),
    /** Only the key id; the secret never leaves the host. Null when no usable key is stored. */
    e2e: z.object({ kid: z.string() }).nullable(),
    crypto: z.boolean(),
  }),
]);

export const e2eProvisionRequest = z.object({
  installation_id: z.string(),
  gateway_id: z.string(),
  /** 32 lowercase hex characters. */
  kid: z.string(),
  /** 32 bytes as 43 unpadded base64url characters. */
  secret: z.string(),
});

/** Whether this profile is paired and which E2E key (by id) it holds. */
export const getE2e = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/e2e',
  operationId: 'getE2e',
  summary: 'End-to-end encryption state of this profile',
  tags: ['e2e-notifications'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'Pairing and key id.', schema: e2eStatusAnswer, headers: noStore },
    400: { description: 'A malformed profile name.', schema: pairingErrorBody },
    401: unauthorized,
    409: { description: "The profile's conduit-push.json is unreadable.", schema: pairingErrorBody },
    503: pairingUnavailable('The profile cannot be resolved.'),
  },
});

/**
 * The phone provisions the pairing's E2E root secret over the dashboard connection (never through the
 * relay). From then on every notification is sealed and only sealed clarify answers are accepted.
 */
export const postE2e = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/e2e',
  operationId: 'postE2e',
  summary: 'Provision the end-to-end encryption key for this pairing',
  tags: ['e2e-notifications'],
  auth: 'bearer',
  query: profileQuery,
  body: e2eProvisionRequest,
  bodyContentType: 'application/json',
  // Read by the handler as the Hermes dashboard reads it (FastAPI's `{"detail"}` errors, 4 KiB).
  bodyReading: 'raw',
  responses: {
    200: { description: 'Stored.', schema: z.object({ ok: z.literal(true), kid: z.string() }), headers: noStore },
    400: {
      description: 'Missing ids, a malformed kid or secret, or a body that is not JSON.',
      schema: pairingErrorBody,
    },
    401: unauthorized,
    409: {
      description: 'Not paired, paired without a gateway id, or paired with a different device.',
      schema: pairingErrorBody,
    },
    413: { description: 'Request body is too large (4 KiB).', schema: pairingErrorBody },
    415: bodyRefusals[415],
    429: { description: 'More than 10 key requests a minute for this profile.', schema: pairingErrorBody },
    503: pairingUnavailable('The profile cannot be resolved.'),
  },
});
