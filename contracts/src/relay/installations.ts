import { z } from 'zod';
import { defineRoute } from '../route.js';
import {
  errorOf,
  installationIdParam,
  installationSchema,
  JSON_BODY,
  rateLimited,
  tooLarge,
  unauthorized,
} from './shared.js';

/** The 400 codes of a body with tokens, in the order they are checked. */
const TOKEN_ERRORS = [
  'invalid_json',
  'invalid_device_token',
  'invalid_voip_token',
  'invalid_watch_voip_token',
  'invalid_location_push_token',
] as const;

const token = z.string().describe('APNs token, hex (64–200 after removing <, > and whitespace; case-insensitive).');

/** Route 2: a phone registers; the answer carries its device credential exactly once. */
export const registerInstallation = defineRoute({
  method: 'POST',
  path: '/v1/installations',
  operationId: 'registerInstallation',
  summary: 'Register a phone',
  tags: ['installations'],
  auth: 'none',
  bodyContentType: JSON_BODY,
  body: z.object({
    bundle_id: z.string(),
    device_token: token,
    environment: z.literal('production'),
    preferences: z.record(z.string(), z.unknown()).optional(),
    voip_token: token.nullable().optional(),
    watch_voip_token: token.nullable().optional(),
    location_push_token: token
      .nullable()
      .optional()
      .describe(
        'The Location Push Service Extension token (startMonitoringLocationPushes); location.request goes to it.',
      ),
  }),
  responses: {
    201: {
      description: 'Registered.',
      schema: z.object({
        installation: installationSchema,
        credential: z.string().describe('`<installationId>.<deviceSecret>`'),
        relay_url: z.string(),
      }),
    },
    400: {
      description: 'Invalid body or token.',
      schema: errorOf([...TOKEN_ERRORS, 'invalid_topic', 'production_only']),
    },
    413: tooLarge,
    429: {
      description: 'Per-IP limit, installation capacity, or the registration budget.',
      schema: errorOf(['rate_limited', 'installation_limit_reached']),
    },
  },
});

/** Route 3: tokens and preferences; a semantic no-op writes nothing. */
export const updateInstallation = defineRoute({
  method: 'PUT',
  path: '/v1/installations/{id}',
  operationId: 'updateInstallation',
  summary: 'Update tokens and preferences',
  tags: ['installations'],
  auth: 'device',
  params: installationIdParam,
  bodyContentType: JSON_BODY,
  body: z.object({
    device_token: token.optional(),
    voip_token: token.nullable().optional().describe('null clears the PushKit token; absent keeps it.'),
    watch_voip_token: token.nullable().optional(),
    location_push_token: token.nullable().optional().describe('null clears the location push token; absent keeps it.'),
    preferences: z.record(z.string(), z.unknown()).optional().describe('Merged over the stored preferences.'),
  }),
  responses: {
    200: { description: 'The installation after the update.', schema: z.object({ installation: installationSchema }) },
    400: {
      description: 'Invalid body or token.',
      schema: errorOf([...TOKEN_ERRORS]),
    },
    401: unauthorized,
    413: tooLarge,
    429: rateLimited,
  },
});

/** Route 4: deactivation (the slot is not freed). */
export const deleteInstallation = defineRoute({
  method: 'DELETE',
  path: '/v1/installations/{id}',
  operationId: 'deleteInstallation',
  summary: 'Deactivate an installation',
  tags: ['installations'],
  auth: 'device',
  params: installationIdParam,
  responses: {
    204: { description: 'Deactivated.' },
    401: unauthorized,
    429: rateLimited,
  },
});
