import { z } from 'zod';
import { defineRoute } from '../route.js';
import {
  beforeTheRoute,
  errorOf,
  installationIdParam,
  malformedId,
  rateLimited,
  sharedStateUnavailable,
  tooLarge,
  unauthorized,
  unreadBodyTooLarge,
} from './shared.js';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Route 8: the phone asks for a pairing code (one live code per installation, 10 minutes). */
export const createPairing = defineRoute({
  method: 'POST',
  path: '/v1/installations/{id}/pairings',
  operationId: 'createPairing',
  summary: 'Create a pairing code',
  tags: ['pairing'],
  auth: 'device',
  params: installationIdParam,
  bodyReading: 'handler',
  body: z.object({
    dashboard_id: z
      .string()
      .regex(/^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/)
      .refine((uuid) => uuid !== NIL_UUID)
      .transform((uuid) => uuid.toLowerCase())
      .nullable()
      .optional()
      .describe(
        'The dashboard this pairing binds to (a UUID, not the nil one; stored lowercase); null or absent: none.',
      ),
  }),
  invalidBodyCode: 'invalid_dashboard_id',
  responses: {
    201: {
      description: 'A new code; any earlier unclaimed code of the installation is void.',
      schema: z.object({ pairing_code: z.string().regex(/^[A-Z2-9]{5}-[A-Z2-9]{5}$/), expires_at: z.string() }),
    },
    400: { description: 'Invalid body or dashboard id.', schema: errorOf(['invalid_json', 'invalid_dashboard_id']) },
    401: unauthorized,
    404: malformedId,
    413: tooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 9: a host claims the code and receives its gateway credential. */
export const claimPairing = defineRoute({
  method: 'POST',
  path: '/v1/pairings/claim',
  operationId: 'claimPairing',
  summary: 'Claim a pairing code',
  tags: ['pairing'],
  auth: 'none',
  bodyReading: 'handler',
  body: z.object({
    pairing_code: z.string().describe('`XXXXX-XXXXX`; case, spaces and dashes do not matter. Not a string: 404.'),
    gateway_name: z
      .preprocess((name) => (name ? String(name as string) : undefined), z.string().optional())
      .describe('Cut to 80 characters; absent or empty: "Hermes gateway". Any other value is read as text.'),
  }),
  // An unusable code is the same 404 as an unknown one.
  bodyErrorCodes: { pairing_code: 'invalid_or_expired_pairing' },
  responses: {
    200: {
      description: 'Paired.',
      schema: z.object({
        installation_id: z.string(),
        gateway_id: z.string(),
        credential: z.string().describe('`<installationId>.<gatewayId>.<gatewaySecret>`'),
        relay_url: z.string(),
      }),
    },
    400: { description: 'The body is not a JSON object.', schema: errorOf(['invalid_json']) },
    404: { description: 'Unknown, expired or used code.', schema: errorOf(['invalid_or_expired_pairing']) },
    413: tooLarge,
    429: {
      description: 'Per-IP limit, the device-change budget, or the installation has 64 gateways.',
      schema: errorOf(['rate_limited', 'gateway_limit_reached']),
    },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 14: a host revokes its own credential (unpair). */
export const revokeCurrentGateway = defineRoute({
  method: 'DELETE',
  path: '/v1/gateways/current',
  operationId: 'revokeCurrentGateway',
  summary: 'Revoke the calling gateway',
  tags: ['pairing'],
  auth: 'gateway',
  responses: {
    204: { description: 'Revoked.' },
    401: unauthorized,
    413: unreadBodyTooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
